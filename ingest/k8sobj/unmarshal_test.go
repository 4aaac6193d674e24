package k8sobj

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discv1 "k8s.io/api/discovery/v1"
	discv1beta1 "k8s.io/api/discovery/v1beta1"
)

// TestUnmarshalAsEncodingJSON: unmarshal gives what encoding/json gives, value and error, for
// every object of a kind the decoder reads in the fixtures and in the bodies of the samples'
// audit logs, for each of them cut short, and for each with one scalar of the wrong type.
func TestUnmarshalAsEncodingJSON(t *testing.T) {
	var objects [][]byte
	fixtures, _ := filepath.Glob("testdata/*.json")
	for _, name := range fixtures {
		objects = append(objects, objectsIn(t, readAll(t, name))...)
	}
	logs, _ := filepath.Glob("../../samples/*/audit.log*")
	for _, name := range logs {
		sc := bufio.NewScanner(bytes.NewReader(readAll(t, name)))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			objects = append(objects, objectsIn(t, sc.Bytes())...)
		}
	}
	kinds := map[string]int{}
	for _, raw := range objects {
		var h header
		if json.Unmarshal(raw, &h) != nil {
			t.Fatalf("fixture object %.80s", raw)
		}
		kinds[h.Kind]++
		variants := [][]byte{raw, raw[:len(raw)/2], raw[:len(raw)-1]}
		if i := bytes.Index(raw, []byte(`"name":"`)); i >= 0 {
			variants = append(variants, append(append(bytes.Clone(raw[:i]), `"name":7,"x":"`...), raw[i+len(`"name":"`):]...))
		}
		for _, data := range variants {
			for _, v := range typesOf(h) {
				want := reflect.New(reflect.TypeOf(v).Elem()).Interface()
				got := reflect.New(reflect.TypeOf(v).Elem()).Interface()
				wantErr, gotErr := json.Unmarshal(data, want), unmarshal(data, got)
				if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
					t.Fatalf("%T of %.120s: error %v, want %v", v, data, gotErr, wantErr)
				}
				if wantErr == nil && !reflect.DeepEqual(got, want) {
					t.Fatalf("%T of %.120s: decoded differently:\n got %+v\nwant %+v", v, data, got, want)
				}
			}
		}
	}
	for _, k := range []string{KindEndpoints, KindEndpointSlice, KindService, KindPod, KindConfigMap, KindLease} {
		if kinds[k] == 0 {
			t.Errorf("no %s among the %d objects compared (%v)", k, len(objects), kinds)
		}
	}
}

// typesOf is what the decoder decodes an object of h's kind into (see emitter.object).
func typesOf(h header) []any {
	types := []any{new(header)}
	switch normalizeKind(h.Kind) {
	case KindEndpoints:
		types = append(types, new(corev1.Endpoints))
	case KindEndpointSlice:
		if strings.HasSuffix(h.APIVersion, "/v1beta1") {
			types = append(types, new(discv1beta1.EndpointSlice))
		} else {
			types = append(types, new(discv1.EndpointSlice))
		}
	case KindService:
		types = append(types, new(corev1.Service))
	case KindPod:
		types = append(types, new(corev1.Pod))
	case KindConfigMap:
		types = append(types, new(corev1.ConfigMap))
	case KindLease:
		types = append(types, new(coordv1.Lease))
	}
	return types
}

// objectsIn returns, re-encoded, every JSON object in data that has a kind and metadata.
func objectsIn(t *testing.T, data []byte) [][]byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	var out [][]byte
	for {
		if err := dec.Decode(&v); err == io.EOF {
			return out
		} else if err != nil {
			return out // the bad fixtures: what was read so far
		}
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if _, ok := v["kind"].(string); ok && v["metadata"] != nil {
					raw, err := json.Marshal(v)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, raw)
				}
				for _, e := range v {
					walk(e)
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(v)
	}
}

func readAll(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return data
}
