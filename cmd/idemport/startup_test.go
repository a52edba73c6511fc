package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/idemport/idemport/internal/testkit"
)

// initAllocLimit is the most a package of the module may allocate while
// it is initialised. Every run of the command pays for the initialisation
// of every package linked into it, a rerun that the quick check settles
// in a few milliseconds too: a table a package needs only when it writes
// is built when it first writes, or written as a constant.
const initAllocLimit = 4 << 10

// depInitLimit is the most a dependency may allocate while it is
// initialised unless heavyDeps names it. Every run pays for the
// initialisation of every package linked into the command, whatever it
// uses: the bytes and the page faults of the heap they first touch (on a
// small VM a fault costs about 10 µs of CPU).
const depInitLimit = 64 << 10

// heavyDeps are the dependencies that allocate more than depInitLimit while
// they initialise, each with what links it into the command: a package of
// a library the command needs and cannot link without. docs/development.md
// ("Where the start goes") measures what each costs.
var heavyDeps = map[string]string{
	"github.com/xuri/excelize/v2":                                     "xlsx sheets (reader/text)",
	"github.com/apache/arrow-go/v18/arrow/compute":                    "Parquet: parquet/file's encodings and pqarrow call it; its init registers every kernel",
	"github.com/apache/arrow-go/v18/arrow/flight/gen/flight":          "Parquet: pqarrow imports Arrow Flight (and gRPC) for its ARROW:schema helpers",
	"github.com/aws/aws-sdk-go-v2/service/s3/internal/endpoints":      "S3 inputs (reader/remote)",
	"github.com/aws/aws-sdk-go-v2/service/sts/internal/endpoints":     "S3 inputs: the credential chain (aws-sdk-go-v2/config), assumed roles",
	"github.com/aws/aws-sdk-go-v2/service/sts/schemas":                "S3 inputs: the credential chain, assumed roles",
	"github.com/aws/aws-sdk-go-v2/service/sso/internal/endpoints":     "S3 inputs: the credential chain, SSO",
	"github.com/aws/aws-sdk-go-v2/service/ssooidc/internal/endpoints": "S3 inputs: the credential chain, SSO",
	"github.com/aws/aws-sdk-go-v2/service/signin/schemas":             "S3 inputs: the credential chain, console sign-in",
}

// TestPackagesAllocateLittleAtStart runs the command with the runtime's
// initialisation trace (GODEBUG=inittrace=1) and checks that no package
// of the module allocates more than initAllocLimit bytes before main, and
// that no dependency allocates more than depInitLimit unless heavyDeps
// names it: a new import that links a heavy package (another AWS service's
// endpoint tables, say) shows here, where a slower start would go
// unnoticed among the tests' noise.
func TestPackagesAllocateLittleAtStart(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(testkit.Binary(t), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("idemport version: %v\n%s", err, stderr.String())
	}
	// A line reads "init PKG @T ms, C ms clock, B bytes, A allocs"; a
	// package with nothing to initialise has none, the runtime always one.
	seen := 0
	heavy := map[string]bool{}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		seen++
		n, err := strconv.Atoi(f[7])
		if err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		if f[1] != modulePath && !strings.HasPrefix(f[1], modulePath+"/") {
			if n <= depInitLimit {
				continue
			}
			heavy[f[1]] = true
			if _, ok := heavyDeps[f[1]]; !ok {
				t.Errorf("%s allocates %d bytes while it is initialised, more than %d, and every run pays for them: import a narrower package than the one that links it (go mod why -m, go list -deps), or name it in heavyDeps with what needs it", f[1], n, depInitLimit)
			}
			continue
		}
		if n > initAllocLimit {
			t.Errorf("%s allocates %d bytes while it is initialised, more than %d: every run pays for them", f[1], n, initAllocLimit)
		}
	}
	if seen == 0 {
		t.Fatalf("no initialisation trace (GODEBUG=inittrace=1):\n%s", stderr.String())
	}
	for p := range heavyDeps {
		if !heavy[p] {
			t.Errorf("heavyDeps names %s, which no longer allocates more than %d bytes while it is initialised (or is no longer linked): remove it, and say in docs/development.md what the start gained", p, depInitLimit)
		}
	}
}

// modulePath is the module's path, the prefix of its packages' paths.
const modulePath = "github.com/idemport/idemport"
