// Command k8sobjdump prints what ingest/k8sobj decodes from Kubernetes object files: the
// decoder's stats, every row with its table, and every rejected stretch of input. It is a
// development tool for the decoder and its fixtures:
//
//	go run ./internal/k8sobjdump ingest/k8sobj/testdata/*
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kubesift/kubesift/ingest/k8sobj"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/k8sobjdump FILE...")
		os.Exit(2)
	}
	var errs []error
	for _, path := range os.Args[1:] {
		errs = append(errs, dump(os.Stdout, path))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "k8sobjdump:", err)
		os.Exit(1)
	}
}

func dump(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(w, "== %s\n", path)
	st, err := k8sobj.Decode(path, f, printer{w})
	if err != nil {
		return fmt.Errorf("decoding %s: %w", path, err)
	}
	fmt.Fprintf(w, "   %+v\n", st)
	return nil
}

// printer is a k8sobj.Handler that prints what it is handed.
type printer struct{ w io.Writer }

func (p printer) Row(r k8sobj.Record) error {
	_, err := fmt.Fprintf(p.w, "   %s %v\n", r.Table(), r.Values())
	return err
}

func (p printer) Bad(line int, byteOffset int64, reason, excerpt string) {
	fmt.Fprintf(p.w, "   BAD line %d, byte %d: %s: %q\n", line, byteOffset, reason, excerpt)
}
