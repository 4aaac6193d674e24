//go:build linux && cgo

package jemalloc

/*
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>

// weak: NULL when the build of DuckDB links no jemalloc
extern int duckdb_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) __attribute__((weak));

static int ks_linked(void) { return duckdb_je_mallctl != NULL; }
static int ks_set_ssize(const char *name, ssize_t v) { return duckdb_je_mallctl(name, NULL, NULL, &v, sizeof(v)); }
static int ks_get_ssize(const char *name, ssize_t *v) { size_t n = sizeof(*v); return duckdb_je_mallctl(name, v, &n, NULL, 0); }
static int ks_get_unsigned(const char *name, unsigned *v) { size_t n = sizeof(*v); return duckdb_je_mallctl(name, v, &n, NULL, 0); }
static int ks_get_bool(const char *name, _Bool *v) { size_t n = sizeof(*v); return duckdb_je_mallctl(name, v, &n, NULL, 0); }

// the decay times of every arena made so far (an arena not made yet fails with EFAULT: it takes the
// defaults, arenas.*_decay_ms, when it is made)
static int ks_set_arenas_decay(ssize_t dirty, ssize_t muzzy) {
	unsigned n = 0;
	int err = ks_get_unsigned("arenas.narenas", &n);
	if (err != 0) return err;
	char name[64];
	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "arena.%u.dirty_decay_ms", i);
		if (ks_set_ssize(name, dirty) == 0) {
			snprintf(name, sizeof(name), "arena.%u.muzzy_decay_ms", i);
			if ((err = ks_set_ssize(name, muzzy)) != 0) return err;
		}
	}
	return 0;
}
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Configure sets opt: the decay times of the arenas made so far and the defaults of those made
// later. (jemalloc's background thread, which purges the arenas of idle threads too, is DuckDB's
// to set: on by its setting allocator_background_threads, off whenever an instance closes.)
func Configure(opt Options) error {
	if C.ks_linked() == 0 {
		return ErrNotLinked
	}
	for _, s := range []struct {
		name  string
		value int
	}{{"arenas.dirty_decay_ms", opt.DirtyDecayMs}, {"arenas.muzzy_decay_ms", opt.MuzzyDecayMs}} {
		if err := call(s.name, func(name *C.char) C.int { return C.ks_set_ssize(name, C.ssize_t(s.value)) }); err != nil {
			return err
		}
	}
	if rc := C.ks_set_arenas_decay(C.ssize_t(opt.DirtyDecayMs), C.ssize_t(opt.MuzzyDecayMs)); rc != 0 {
		return fmt.Errorf("jemalloc: setting the arenas' decay times: %w", syscall.Errno(rc))
	}
	return nil
}

// Read returns the options arenas are made with (arenas.*_decay_ms).
func Read() (Options, error) {
	if C.ks_linked() == 0 {
		return Options{}, ErrNotLinked
	}
	var dirty, muzzy C.ssize_t
	err := call("arenas.dirty_decay_ms", func(name *C.char) C.int { return C.ks_get_ssize(name, &dirty) })
	if err == nil {
		err = call("arenas.muzzy_decay_ms", func(name *C.char) C.int { return C.ks_get_ssize(name, &muzzy) })
	}
	return Options{DirtyDecayMs: int(dirty), MuzzyDecayMs: int(muzzy)}, err
}

// ArenaDecayMs returns the dirty and muzzy decay times of arena i (made already).
func ArenaDecayMs(i int) (dirty, muzzy int, err error) {
	if C.ks_linked() == 0 {
		return 0, 0, ErrNotLinked
	}
	var d, m C.ssize_t
	err = call(fmt.Sprintf("arena.%d.dirty_decay_ms", i), func(name *C.char) C.int { return C.ks_get_ssize(name, &d) })
	if err == nil {
		err = call(fmt.Sprintf("arena.%d.muzzy_decay_ms", i), func(name *C.char) C.int { return C.ks_get_ssize(name, &m) })
	}
	return int(d), int(m), err
}

// BackgroundThread says whether jemalloc's background thread runs (the background_thread
// setting, which DuckDB sets: its allocator_background_threads).
func BackgroundThread() (bool, error) {
	if C.ks_linked() == 0 {
		return false, ErrNotLinked
	}
	var on C._Bool
	err := call("background_thread", func(name *C.char) C.int { return C.ks_get_bool(name, &on) })
	return bool(on), err
}

// call runs fn with name as a C string and turns its return code into an error.
func call(name string, fn func(*C.char) C.int) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if rc := fn(cname); rc != 0 {
		return fmt.Errorf("jemalloc: %s: %w", name, syscall.Errno(rc))
	}
	return nil
}
