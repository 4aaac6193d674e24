// Package testutil holds what kubesift's tests share: golden files with one switch to rewrite
// them all (UPDATE_GOLDENS=1, or -update, which every test binary accepts), and optional
// programs that a test skips without locally but requires under CI=true.
package testutil
