package auditgen

import (
	"strconv"
	"time"
)

const hexDigits = "0123456789abcdef"

// mix64 is the splitmix64 finalizer: a bijection on uint64.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// appendUUID appends a version-4-looking UUID derived from (key, n). For a
// fixed key it is injective in n: the 64 bits of mix64(n^key) all appear in
// the output, the version and variant nibbles come from the other word.
func appendUUID(dst []byte, key, n uint64) []byte {
	x := mix64(n ^ key)
	y := mix64(n + key*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019)
	var b [16]byte
	b[0] = byte(x >> 56)
	b[1] = byte(x >> 48)
	b[2] = byte(x >> 40)
	b[3] = byte(x >> 32)
	b[4] = byte(x >> 24)
	b[5] = byte(x >> 16)
	b[6] = 0x40 | byte(y&0x0f)
	b[7] = byte(y >> 8)
	b[8] = 0x80 | byte((y>>16)&0x3f)
	b[9] = byte(y >> 24)
	b[10] = byte(x >> 8)
	b[11] = byte(x)
	b[12] = byte(y >> 32)
	b[13] = byte(y >> 40)
	b[14] = byte(y >> 48)
	b[15] = byte(y >> 56)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}

// tsCache formats Unix-microsecond timestamps as RFC3339 UTC with exactly six
// fractional digits (metav1.MicroTime's JSON form), recomputing the
// date/time part only when the second changes.
type tsCache struct {
	sec    int64
	prefix [19]byte // 2006-01-02T15:04:05
	valid  bool
}

func (c *tsCache) load(sec int64) {
	if c.valid && c.sec == sec {
		return
	}
	c.sec, c.valid = sec, true
	time.Unix(sec, 0).UTC().AppendFormat(c.prefix[:0], "2006-01-02T15:04:05")
}

// appendMicro appends 2006-01-02T15:04:05.000000Z.
func (c *tsCache) appendMicro(dst []byte, us int64) []byte {
	sec, frac := us/1e6, us%1e6
	c.load(sec)
	dst = append(dst, c.prefix[:]...)
	dst = append(dst, '.',
		byte('0'+frac/100000), byte('0'+frac/10000%10), byte('0'+frac/1000%10),
		byte('0'+frac/100%10), byte('0'+frac/10%10), byte('0'+frac%10), 'Z')
	return dst
}

// appendSec appends 2006-01-02T15:04:05Z (metav1.Time's JSON form).
func (c *tsCache) appendSec(dst []byte, us int64) []byte {
	c.load(us / 1e6)
	dst = append(dst, c.prefix[:]...)
	return append(dst, 'Z')
}

func appendInt(dst []byte, v int64) []byte { return strconv.AppendInt(dst, v, 10) }
