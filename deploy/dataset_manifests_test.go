package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// kubectl runs kubectl against the apiserver of $KUBESIFT_TEST_KUBECONFIG.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", os.Getenv("KUBESIFT_TEST_KUBECONFIG")}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestDatasetManifests validates kubernetes/dataset/ with a server-side dry run against a real
// kube-apiserver, then creates the Indexed Job and checks that the Job controller makes its
// pods, one per completion index, through admission. It needs kubectl and
// KUBESIFT_TEST_KUBECONFIG naming a disposable cluster (deploy/test-against-lab.sh sets it for
// the lab's apiserver); without them it is skipped with a message.
func TestDatasetManifests(t *testing.T) {
	if os.Getenv("KUBESIFT_TEST_KUBECONFIG") == "" {
		t.Skip("no apiserver: set KUBESIFT_TEST_KUBECONFIG to a disposable cluster's kubeconfig (deploy/test-against-lab.sh does)")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl not found on PATH")
	}
	if out, err := kubectl(t, "", "version"); err != nil {
		t.Skipf("no apiserver reachable through $KUBESIFT_TEST_KUBECONFIG: %s", out)
	}
	// A server-side dry run does not create the namespace: the namespaced objects need it for real.
	if out, err := kubectl(t, "", "apply", "-f", "kubernetes/00-namespace.yaml", "-f", "kubernetes/10-serviceaccount.yaml"); err != nil {
		t.Fatalf("creating the namespace: %s", out)
	}
	out, err := kubectl(t, "", "apply", "--dry-run=server", "-f", "kubernetes/dataset/")
	if err != nil {
		t.Fatalf("dry-run=server -f kubernetes/dataset/: %v\n%s", err, out)
	}
	if n := strings.Count(out, "(server dry run)"); n != 3 {
		t.Errorf("dry run validated %d objects, want 3:\n%s", n, out)
	}

	manifest, err := os.ReadFile("kubernetes/dataset/30-analyze-indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	job := strings.Replace(string(manifest), "name: kubesift-analyze-2026-11-21", "name: kubesift-analyze-test", 1)
	if out, err := kubectl(t, job, "apply", "-f", "-"); err != nil {
		t.Fatalf("creating the Indexed Job: %s", out)
	}
	defer kubectl(t, "", "-n", "kubesift", "delete", "job", "kubesift-analyze-test", "--cascade=foreground", "--wait=false")
	// The Job controller creates parallelism (2) pods, indexes 0 and 1, each passing its index
	// to --partition; admission accepts them (no kubelet runs them in the lab).
	var indexes string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		indexes, _ = kubectl(t, "", "-n", "kubesift", "get", "pods", "-l", "job-name=kubesift-analyze-test", "--sort-by", "{.metadata.annotations.batch\\.kubernetes\\.io/job-completion-index}",
			"-o", `jsonpath={range .items[*]}{.metadata.annotations.batch\.kubernetes\.io/job-completion-index}{" "}{end}`)
		if strings.TrimSpace(indexes) == "0 1" {
			break
		}
	}
	if strings.TrimSpace(indexes) != "0 1" {
		t.Fatalf("pods of the Indexed Job have completion indexes %q, want \"0 1\"", indexes)
	}
	args, _ := kubectl(t, "", "-n", "kubesift", "get", "pods", "-l", "job-name=kubesift-analyze-test", "-o", "jsonpath={.items[0].spec.containers[0].args}")
	if !strings.Contains(args, `"--partition","$(JOB_COMPLETION_INDEX)"`) {
		t.Errorf("pod args %s do not pass the completion index to --partition", args)
	}
	env, _ := kubectl(t, "", "-n", "kubesift", "get", "pods", "-l", "job-name=kubesift-analyze-test", "-o", "jsonpath={.items[0].spec.containers[0].env}")
	if !strings.Contains(env, "JOB_COMPLETION_INDEX") {
		t.Errorf("the Job controller set no JOB_COMPLETION_INDEX: env %s", env)
	}
	t.Logf("Indexed Job pods created with completion indexes %s", indexes)
}
