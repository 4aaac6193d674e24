//go:build linux && cgo

package jemalloc

/*
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
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

// jemalloc's extent hooks (include/jemalloc/jemalloc_typedefs.h.in: extent_hooks_t): the functions
// an arena maps, returns, splits and merges its memory with.
typedef struct ks_extent_hooks ks_extent_hooks;
typedef void *(ks_extent_alloc)(ks_extent_hooks *, void *, size_t, size_t, bool *, bool *, unsigned);
typedef bool (ks_extent_merge)(ks_extent_hooks *, void *, size_t, void *, size_t, bool, unsigned);
struct ks_extent_hooks {
	ks_extent_alloc *alloc;
	void *dalloc, *destroy, *commit, *decommit, *purge_lazy, *purge_forced, *split;
	ks_extent_merge *merge;
};

#define KS_PAGE ((size_t)4096)
#define KS_HUGEPAGE ((size_t)2 << 20)

static ks_extent_hooks ks_huge_hooks; // jemalloc's own functions but alloc and merge
static size_t ks_huge_bytes;          // bytes mapped by ks_huge_alloc

// ks_huge_alloc maps memory as jemalloc's default does on Linux when the kernel overcommits
// (anonymous, MAP_NORESERVE, at new_addr if asked, aligned, zeroed and committed), then advises the kernel to back it with huge pages (MADV_HUGEPAGE:
// transparent huge pages in "madvise" mode, the default of most distributions). With jemalloc's
// retain (its default on Linux) an arena maps memory in growing pieces of 2 MiB and more and keeps
// reusing them, so this runs seldom. It must not call into jemalloc: jemalloc's own alloc and merge
// hooks look up the thread's state, which on a thread whose first call into jemalloc is a free
// makes it allocate while it holds the lock that free took (a deadlock, seen with them).
static void *ks_huge_alloc(ks_extent_hooks *h, void *new_addr, size_t size, size_t alignment, bool *zero, bool *commit, unsigned arena) {
	if (alignment < KS_PAGE) alignment = KS_PAGE;
	if (size + alignment < size) return NULL;
	void *p;
	if (new_addr != NULL) {
		p = mmap(new_addr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED) return NULL;
		if (p != new_addr) { munmap(p, size); return NULL; }
	} else {
		size_t span = size + alignment - KS_PAGE;
		char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED) return NULL;
		char *a = (char *)(((uintptr_t)m + alignment - 1) & ~(uintptr_t)(alignment - 1));
		if (a > m) munmap(m, a - m);
		if (m + span > a + size) munmap(a + size, (m + span) - (a + size));
		p = a;
	}
	*zero = true;
	*commit = true;
	// a kernel without transparent huge pages refuses the advice: the memory is then as jemalloc maps it
	if (size >= KS_HUGEPAGE) (void)madvise(p, size, MADV_HUGEPAGE);
	__atomic_add_fetch(&ks_huge_bytes, size, __ATOMIC_RELAXED);
	return p;
}

// ks_merge says that two extents may merge: anonymous mappings of Linux always may (jemalloc's
// default answers the same with retain, and with no sbrk memory, which DuckDB's build never uses).
static bool ks_merge(ks_extent_hooks *h, void *a, size_t size_a, void *b, size_t size_b, bool committed, unsigned arena) {
	return false;
}

// ks_set_huge_hooks gives ks_huge_alloc to arenas 0 .. opt.narenas-1, the arenas jemalloc assigns
// threads to (an arena not made yet is made with them); *set is how many it set. Under the kernel's
// strict accounting (vm.overcommit_memory 2), where jemalloc maps memory uncommitted, it sets none.
static int ks_set_huge_hooks(unsigned *set) {
	*set = 0;
	FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
	if (f != NULL) {
		int mode = 0;
		int read = fscanf(f, "%d", &mode);
		fclose(f);
		if (read == 1 && mode == 2) return 0;
	}
	if (ks_huge_hooks.alloc == NULL) {
		ks_extent_hooks *defaults = NULL;
		size_t n = sizeof(defaults);
		int err = duckdb_je_mallctl("arena.0.extent_hooks", &defaults, &n, NULL, 0);
		if (err != 0) return err;
		ks_huge_hooks = *defaults;
		ks_huge_hooks.alloc = ks_huge_alloc;
		ks_huge_hooks.merge = ks_merge;
	}
	unsigned narenas = 0;
	int err = ks_get_unsigned("opt.narenas", &narenas);
	if (err != 0) return err;
	char name[64];
	for (unsigned i = 0; i < narenas; i++) {
		ks_extent_hooks *hooks = &ks_huge_hooks;
		snprintf(name, sizeof(name), "arena.%u.extent_hooks", i);
		if ((err = duckdb_je_mallctl(name, NULL, NULL, &hooks, sizeof(hooks))) != 0) return err;
		(*set)++;
	}
	return 0;
}

// ks_huge_arenas counts the arenas 0 .. opt.narenas-1 made so far whose alloc is ks_huge_alloc.
static int ks_huge_arenas(unsigned *count) {
	*count = 0;
	unsigned narenas = 0;
	int err = ks_get_unsigned("opt.narenas", &narenas);
	if (err != 0) return err;
	char name[64];
	for (unsigned i = 0; i < narenas; i++) {
		ks_extent_hooks *hooks = NULL;
		size_t n = sizeof(hooks);
		snprintf(name, sizeof(name), "arena.%u.extent_hooks", i);
		if (duckdb_je_mallctl(name, &hooks, &n, NULL, 0) == 0 && hooks != NULL && hooks->alloc == ks_huge_alloc) (*count)++;
	}
	return 0;
}

static size_t ks_huge_advised(void) { return __atomic_load_n(&ks_huge_bytes, __ATOMIC_RELAXED); }
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

// HugePages makes the arenas that DuckDB's threads allocate from ask the kernel for transparent
// huge pages (madvise MADV_HUGEPAGE) for the memory they map from now on: one page fault maps 2
// MiB instead of 4 KiB. DuckDB's build of jemalloc has no option for it ("No THP support"). In the
// kernel's "never" mode the advice does nothing, and in "always" mode there is nothing to add.
// It returns how many arenas it set: none under the kernel's strict accounting of memory
// (vm.overcommit_memory 2), where jemalloc maps memory it has not committed yet.
func HugePages() (int, error) {
	if C.ks_linked() == 0 {
		return 0, ErrNotLinked
	}
	var set C.unsigned
	if rc := C.ks_set_huge_hooks(&set); rc != 0 {
		return int(set), fmt.Errorf("jemalloc: setting arena %d's extent hooks: %w", int(set), syscall.Errno(rc))
	}
	return int(set), nil
}

// HugePageArenas returns how many of the arenas that DuckDB's threads allocate from map memory
// with the advice of HugePages.
func HugePageArenas() (int, error) {
	if C.ks_linked() == 0 {
		return 0, ErrNotLinked
	}
	var count C.unsigned
	if rc := C.ks_huge_arenas(&count); rc != 0 {
		return 0, fmt.Errorf("jemalloc: reading the arenas' extent hooks: %w", syscall.Errno(rc))
	}
	return int(count), nil
}

// HugePageBytes returns how many bytes of memory HugePages's arenas have mapped with the advice.
func HugePageBytes() int64 { return int64(C.ks_huge_advised()) }

// call runs fn with name as a C string and turns its return code into an error.
func call(name string, fn func(*C.char) C.int) error {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if rc := fn(cname); rc != 0 {
		return fmt.Errorf("jemalloc: %s: %w", name, syscall.Errno(rc))
	}
	return nil
}
