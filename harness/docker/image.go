package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// imageBuildTimeout bounds an image build: the library retries some
// failures with backoff for far longer.
const imageBuildTimeout = 2 * time.Minute

// backendDockerfile makes the backend image: no base image (nothing is
// pulled), the binary alone, run in exec form (there is no shell).
const backendDockerfile = `FROM scratch
COPY lbchaos /lbchaos
EXPOSE 8080
ENTRYPOINT ["/lbchaos", "serve"]
`

// BuildImage returns the reference "lbchaos-backend:<tag>" of the backend
// image holding binary, where tag is the first 12 hex digits of the
// binary's SHA-256. It builds the image unless the engine already has it.
// binary must be a statically linked linux ELF executable for the engine's
// architecture (built with CGO_ENABLED=0). A failed build's error includes
// the builder's output.
func BuildImage(ctx context.Context, binary string, log io.Writer) (ref string, err error) {
	return BuildBinaryImage(ctx, binary, BackendImageRepo, log)
}

// BuildBinaryImage returns the reference "<repo>:<tag>" of a FROM scratch
// image holding binary as /<its file name>, run as the entry point, where
// tag is the first 12 hex digits of the SHA-256 of the binary (and the
// image's layout). It builds the image unless the engine already has it.
// binary must be statically linked for the engine (CGO_ENABLED=0); the
// image has nothing else, no shell. With repo BackendImageRepo it makes
// the backend image (entry point "/lbchaos serve"), as BuildImage does.
func BuildBinaryImage(ctx context.Context, binary, repo string, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	tc, err := newTCProvider(ctx)
	if err != nil {
		return "", err
	}
	defer tc.Close()
	return buildBinaryImage(ctx, tc, binary, repo, log)
}

func buildBinaryImage(ctx context.Context, tc *testcontainers.DockerProvider, binary, repo string, log io.Writer) (string, error) {
	what := "backend image"
	name, dockerfile := "lbchaos", backendDockerfile
	if repo != BackendImageRepo {
		what = "image " + repo
		name = filepath.Base(binary)
		dockerfile = fmt.Sprintf("FROM scratch\nCOPY %s /%s\nENTRYPOINT [%q]\n", name, name, "/"+name)
	}
	cli := tc.Client()
	info, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return "", fmt.Errorf("%s: engine info: %w", what, err)
	}
	if info.Info.OSType != "" && info.Info.OSType != "linux" {
		return "", fmt.Errorf("%s: the engine runs %s containers; lbchaos needs linux", what, info.Info.OSType)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if err := checkStaticELF(binary, data, info.Info.Architecture); err != nil {
		if repo != BackendImageRepo {
			err = fmt.Errorf("%s: build it with CGO_ENABLED=0 go build", strings.TrimSuffix(err.Error(), ": "+errNotStatic.Error()))
		}
		return "", fmt.Errorf("%s: %w", what, err)
	}
	h := sha256.New()
	h.Write(data)
	if repo != BackendImageRepo {
		h.Write([]byte(dockerfile))
	}
	tag := hex.EncodeToString(h.Sum(nil))[:12]
	ref := repo + ":" + tag

	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		fmt.Fprintf(log, "docker: reusing image %s\n", ref)
		return ref, nil
	} else if !cerrdefs.IsNotFound(err) {
		return "", fmt.Errorf("%s: inspect %s: %w", what, ref, err)
	}

	archive, err := buildContext(dockerfile, name, data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	var out bytes.Buffer
	bctx, cancel := context.WithTimeout(ctx, imageBuildTimeout)
	defer cancel()
	t0 := time.Now()
	_, err = tc.BuildImage(bctx, &testcontainers.ContainerRequest{
		FromDockerfile: testcontainers.FromDockerfile{
			ContextArchive: bytes.NewReader(archive),
			Repo:           repo,
			Tag:            tag,
			KeepImage:      true,
			BuildLogWriter: &out,
		},
	})
	if err != nil {
		msg := strings.TrimSpace(out.String())
		if msg == "" {
			msg = "(no output)"
		}
		return "", fmt.Errorf("%s: building %s: %w; builder output:\n%s", what, ref, err, msg)
	}
	fmt.Fprintf(log, "docker: built image %s from %s in %v\n", ref, binary, time.Since(t0).Round(time.Millisecond))
	return ref, nil
}

// buildContext returns the tar build context: the Dockerfile and the
// binary, as name.
func buildContext(dockerfile, name string, binary []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte(dockerfile)},
		{name, 0o755, binary},
	}
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// engineMachine maps the engine's architecture, as `uname -m` or GOARCH
// spell it, to an ELF machine.
var engineMachine = map[string]elf.Machine{
	"x86_64": elf.EM_X86_64, "amd64": elf.EM_X86_64,
	"aarch64": elf.EM_AARCH64, "arm64": elf.EM_AARCH64,
	"i386": elf.EM_386, "i686": elf.EM_386, "386": elf.EM_386,
	"armv7l": elf.EM_ARM, "armv6l": elf.EM_ARM, "arm": elf.EM_ARM,
	"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390,
	"riscv64": elf.EM_RISCV, "loongarch64": elf.EM_LOONGARCH,
}

// errNotStatic is wrapped by checkStaticELF's errors.
var errNotStatic = errors.New("the backend image needs a static linux lbchaos binary: build it with `CGO_ENABLED=0 go build ./cmd/lbchaos` or `make build`")

// checkStaticELF returns an error unless data (read from path) is an ELF
// executable for arch (the engine's; "" skips that check) without an
// interpreter, i.e. statically linked.
func checkStaticELF(path string, data []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", path, errNotStatic)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s is an ELF %v, not an executable: %w", path, f.Type, errNotStatic)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked: %w", path, errNotStatic)
		}
	}
	if want, ok := engineMachine[arch]; ok && f.Machine != want {
		return fmt.Errorf("%s is built for %v, the engine runs %s: %w", path, f.Machine, arch, errNotStatic)
	}
	return nil
}
