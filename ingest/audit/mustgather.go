package audit

import (
	"path/filepath"
	"regexp"
)

// mustGatherRe matches the audit logs of an OpenShift must-gather (oc adm must-gather --
// /usr/bin/gather_audit_logs): audit_logs/<apiserver>/<node>-audit-<time>.log.gz, or
// <node>-audit.log for the current file.
var mustGatherRe = regexp.MustCompile(`(?:^|/)audit_logs/(kube-apiserver|openshift-apiserver|oauth-apiserver)/([^/]+?)-(?:termination-)?audit[-.][^/]*$`)

// pathAPIServer returns "<apiserver>/<node>" for an audit log in a must-gather's layout, ""
// for any other path.
func pathAPIServer(path string) string {
	m := mustGatherRe.FindStringSubmatch(filepath.ToSlash(path))
	if m == nil {
		return ""
	}
	return m[1] + "/" + m[2]
}
