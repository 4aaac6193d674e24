//go:build k8sobj_fixturegen

package k8sobj

import (
	"testing"

	sigsyaml "sigs.k8s.io/yaml"
)

const yamlGen = true

func kubectlYAML(t testing.TB, v any) []byte {
	// kubectl -o yaml prints through sigs.k8s.io/yaml: JSON, then YAML with sorted keys.
	b, err := sigsyaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
