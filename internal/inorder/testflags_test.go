package inorder

// Linking internal/testutil makes this package's test binary accept -update, so that
// go test ./... -update (the same as UPDATE_GOLDENS=1) runs every package.
import _ "github.com/kubesift/kubesift/internal/testutil"
