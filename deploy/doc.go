// Package deploy holds kubesift's image build and Kubernetes manifests (no Go code); its test
// checks the dataset manifests (kubernetes/dataset/) against a real kube-apiserver.
package deploy
