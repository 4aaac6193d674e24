package k8sobj

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxAliasNodes bounds the nodes written through aliases in one document ("billion laughs").
// kubectl never writes aliases; hand-written manifests use a few.
const maxAliasNodes = 1_000_000

// nodeJSON converts a YAML node to JSON the way sigs.k8s.io/yaml does for Kubernetes objects:
// mappings become objects (keys as strings), scalars keep their resolved YAML 1.2 type.
// budget is shared by the calls for one document.
func nodeJSON(n *yaml.Node, budget *int) ([]byte, error) {
	var b bytes.Buffer
	if err := writeNodeJSON(&b, n, budget, 0, false); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeString(b *bytes.Buffer, s string) {
	j, _ := json.Marshal(s)
	b.Write(j)
}

func writeNodeJSON(b *bytes.Buffer, n *yaml.Node, budget *int, depth int, aliased bool) error {
	if aliased {
		*budget--
		if *budget < 0 {
			return errors.New("YAML document too large after expanding aliases")
		}
	}
	if depth > 1000 {
		return errors.New("YAML nested too deeply")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			b.WriteString("null")
			return nil
		}
		return writeNodeJSON(b, n.Content[0], budget, depth+1, aliased)
	case yaml.AliasNode:
		if n.Alias == nil {
			return fmt.Errorf("line %d: unknown alias", n.Line)
		}
		return writeNodeJSON(b, n.Alias, budget, depth+1, true)
	case yaml.MappingNode:
		return writeMappingJSON(b, n, budget, depth, aliased)
	case yaml.SequenceNode:
		return writeSequenceJSON(b, n, budget, depth, aliased)
	case yaml.ScalarNode:
		return writeScalarJSON(b, n)
	}
	return fmt.Errorf("line %d: unsupported YAML node", n.Line)
}

// writeMappingJSON writes a mapping as a JSON object; its keys must be scalars (or aliases of
// scalars).
func writeMappingJSON(b *bytes.Buffer, n *yaml.Node, budget *int, depth int, aliased bool) error {
	b.WriteByte('{')
	for i := 0; i+1 < len(n.Content); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k := n.Content[i]
		for k.Kind == yaml.AliasNode && k.Alias != nil {
			k = k.Alias
		}
		if k.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: mapping key is not a scalar", k.Line)
		}
		writeString(b, k.Value)
		b.WriteByte(':')
		if err := writeNodeJSON(b, n.Content[i+1], budget, depth+1, aliased); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

// writeSequenceJSON writes a sequence as a JSON array.
func writeSequenceJSON(b *bytes.Buffer, n *yaml.Node, budget *int, depth int, aliased bool) error {
	b.WriteByte('[')
	for i, c := range n.Content {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := writeNodeJSON(b, c, budget, depth+1, aliased); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

// writeScalarJSON writes a scalar as the JSON value of its resolved tag: null, a boolean, a
// number, or (strings, timestamps, binary and custom tags) its text.
func writeScalarJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		b.WriteString(strconv.FormatBool(v))
	case "!!int":
		var v int64
		if err := n.Decode(&v); err != nil {
			// Out of int64 range: keep the digits as a float.
			f, ferr := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			if ferr != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			return writeFloat(b, f, n)
		}
		b.WriteString(strconv.FormatInt(v, 10))
	case "!!float":
		var v float64
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		return writeFloat(b, v, n)
	default: // !!str, !!timestamp, !!binary and custom tags keep their text
		writeString(b, n.Value)
	}
	return nil
}

func writeFloat(b *bytes.Buffer, f float64, n *yaml.Node) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		writeString(b, n.Value)
		return nil
	}
	b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	return nil
}
