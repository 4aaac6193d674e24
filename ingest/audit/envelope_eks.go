package audit

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/v1"

	"github.com/kubesift/kubesift/internal/load"
)

// eksLogEvents is the output of `aws logs filter-log-events` or `get-log-events` on an EKS
// cluster's log group /aws/eks/<cluster>/cluster: {"events":[{"logStreamName":...,"message":
// "<event JSON>"}]}, pretty-printed, possibly many pages one after the other. It does not name
// the log group, so the cluster comes from --cluster; the apiserver is the log stream
// (kube-apiserver-audit-<id>).
type eksLogEvents struct{}

func (eksLogEvents) name() string { return "eks-log-events" }

func (eksLogEvents) detect(_ string, head []byte) bool {
	probe := head[:min(len(head), 8<<10)]
	return startsWith(probe, '{') && bytes.Contains(probe, []byte(`"events"`)) &&
		bytes.Contains(probe, []byte(`"message"`)) && looksLikeQuotedAudit(probe)
}

func (e eksLogEvents) decode(f *load.File, out *events) error {
	return eachDocument(f, out, "CloudWatch Logs events page", e.events)
}

// events are the audit events of one record.
func (eksLogEvents) events(doc []byte, at origin) ([]event, error) {
	var page struct {
		Events *[]struct {
			LogStreamName string `json:"logStreamName"`
			Message       string `json:"message"`
		} `json:"events"`
	}
	if err := json.Unmarshal(doc, &page); err != nil {
		return nil, err
	}
	if page.Events == nil {
		return nil, fmt.Errorf("no events member")
	}
	var evs []event
	for _, e := range *page.Events {
		o := at
		o.apiserver = e.LogStreamName
		evs = append(evs, messageEvent(e.Message, o))
	}
	return evs, nil
}

// eksFirehose is CloudWatch Logs subscription records as Firehose delivers them to S3:
// concatenated gzip members, each one JSON object {"messageType":"DATA_MESSAGE","logGroup":...,
// "logStream":...,"logEvents":[{"message":...}]}, with nothing between the objects.
// CONTROL_MESSAGE records (CloudWatch checking that the destination is reachable) hold no events.
type eksFirehose struct{}

func (eksFirehose) name() string { return "eks-firehose" }

func (eksFirehose) detect(_ string, head []byte) bool {
	probe := head[:min(len(head), 8<<10)]
	return startsWith(probe, '{') && bytes.Contains(probe, []byte(`"messageType"`)) &&
		bytes.Contains(probe, []byte(`"logEvents"`)) &&
		(looksLikeQuotedAudit(head) || bytes.Contains(probe, []byte(`"CONTROL_MESSAGE"`)))
}

func (e eksFirehose) decode(f *load.File, out *events) error {
	return eachDocument(f, out, "CloudWatch Logs subscription record", e.events)
}

// events are the audit events of one record.
func (eksFirehose) events(doc []byte, at origin) ([]event, error) {
	var rec struct {
		MessageType string `json:"messageType"`
		LogGroup    string `json:"logGroup"`
		LogStream   string `json:"logStream"`
		LogEvents   []struct {
			Message string `json:"message"`
		} `json:"logEvents"`
	}
	if err := json.Unmarshal(doc, &rec); err != nil {
		return nil, err
	}
	switch rec.MessageType {
	case "CONTROL_MESSAGE":
		return nil, nil
	case "DATA_MESSAGE":
	default:
		return nil, fmt.Errorf("messageType %q, want DATA_MESSAGE or CONTROL_MESSAGE", rec.MessageType)
	}
	at.cluster, at.apiserver = eksCluster(rec.LogGroup), rec.LogStream
	evs := make([]event, len(rec.LogEvents))
	for i, e := range rec.LogEvents {
		evs[i] = messageEvent(e.Message, at)
	}
	return evs, nil
}

// eksCluster returns the cluster of an EKS log group /aws/eks/<cluster>/cluster, or the group
// itself when it is named otherwise.
func eksCluster(group string) string {
	if name, ok := strings.CutPrefix(group, "/aws/eks/"); ok {
		if name, ok := strings.CutSuffix(name, "/cluster"); ok {
			return name
		}
	}
	return group
}

// messageEvent is the audit event a log shipper's message holds. A message that is not an
// object is passed on as a JSON string, for DuckDB to reject with its text.
func messageEvent(message string, at origin) event {
	raw := []byte(message)
	if !startsWith(raw, '{') {
		raw, _ = json.Marshal(message)
	}
	return event{raw, at}
}

// startsWith reports whether the first byte that is not white space is c.
func startsWith(b []byte, c byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == c
}

// looksLikeQuotedAudit reports whether probe holds an audit event as a JSON string.
func looksLikeQuotedAudit(probe []byte) bool {
	return bytes.Contains(probe, []byte(`audit.k8s.io/`)) && bytes.Contains(probe, []byte(`\"auditID\"`))
}
