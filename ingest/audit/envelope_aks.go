package audit

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json/v1"

	"github.com/kubesift/kubesift/internal/load"
)

// aksDiagnostics is an AKS cluster's diagnostic setting output for the categories kube-audit and
// kube-audit-admin: storage-account blobs (PT1H.json, one record per line) or Event Hub messages
// ({"records":[...]}). Each record holds the event in properties.log, as a JSON string or an
// object; the cluster is the last part of its resourceId, the apiserver its properties.pod.
type aksDiagnostics struct{}

func (aksDiagnostics) name() string { return "aks-diagnostics" }

func (aksDiagnostics) detect(_ string, head []byte) bool {
	probe := head[:min(len(head), 8<<10)]
	return startsWith(probe, '{') && bytes.Contains(probe, []byte(`"kube-audit`)) &&
		bytes.Contains(probe, []byte(`"properties"`)) && bytes.Contains(bytes.ToUpper(probe), []byte(`/MANAGEDCLUSTERS/`))
}

// aksRecord is one diagnostic log record.
type aksRecord struct {
	ResourceID string `json:"resourceId"`
	Category   string `json:"category"`
	Properties struct {
		Log json.RawMessage `json:"log"`
		Pod string          `json:"pod"`
	} `json:"properties"`
}

func (e aksDiagnostics) decode(f *load.File, out *events) error {
	return eachDocument(f, out, "AKS diagnostic record", e.events)
}

// events are the audit events of one record.
func (aksDiagnostics) events(doc []byte, at origin) ([]event, error) {
	var msg struct {
		Records *[]aksRecord `json:"records"`
		aksRecord
	}
	if err := json.Unmarshal(doc, &msg); err != nil {
		return nil, err
	}
	records := []aksRecord{msg.aksRecord}
	if msg.Records != nil { // an Event Hub message
		records = *msg.Records
	}
	var evs []event
	for _, r := range records {
		if !strings.HasPrefix(r.Category, "kube-audit") {
			continue // another category sent to the same place (kube-apiserver, guard, ...)
		}
		if len(r.Properties.Log) == 0 {
			return nil, fmt.Errorf("%s record without properties.log", r.Category)
		}
		o := at
		o.cluster, o.apiserver = aksCluster(r.ResourceID), r.Properties.Pod
		var text string
		if json.Unmarshal(r.Properties.Log, &text) == nil {
			evs = append(evs, messageEvent(text, o))
		} else {
			evs = append(evs, event{r.Properties.Log, o})
		}
	}
	return evs, nil
}

// aksCluster returns the cluster name in a resourceId
// /SUBSCRIPTIONS/<id>/RESOURCEGROUPS/<group>/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/<name>,
// lower-cased: Azure writes resource ids in upper case, and its names are case-insensitive.
func aksCluster(resourceID string) string {
	i := strings.LastIndex(strings.ToUpper(resourceID), "/MANAGEDCLUSTERS/")
	if i < 0 {
		return strings.ToLower(resourceID)
	}
	name, _, _ := strings.Cut(resourceID[i+len("/MANAGEDCLUSTERS/"):], "/")
	return strings.ToLower(name)
}
