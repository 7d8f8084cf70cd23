package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestServiceModulesTakesTheNewestMention(t *testing.T) {
	log := []byte("# Release (2026-11-10)\n" +
		"* `github.com/aws/aws-sdk-go-v2/service/ec2`: [v1.344.0](service/ec2/CHANGELOG.md#v13440-2026-11-10)\n" +
		"* `github.com/aws/aws-sdk-go-v2/service/internal/checksum`: [v1.11.4](x)\n" +
		"* `github.com/aws/aws-sdk-go-v2/service/bedrockruntime/internal/testing`: [v1.0.0-preview](x)\n" +
		"# Release (2026-11-01)\n" +
		"* `github.com/aws/aws-sdk-go-v2/service/ec2`: [v1.343.0](service/ec2/CHANGELOG.md)\n" +
		"* `github.com/aws/aws-sdk-go-v2/service/b2bi`: [v1.0.0-preview.130](x)\n")
	got := serviceModules(log)
	if len(got) != 2 || got["ec2"] != "v1.344.0" || got["b2bi"] != "v1.0.0-preview.130" {
		t.Fatalf("%v", got)
	}
}

func TestReadService(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("api_client.go", "package secretsmanager\n\nconst ServiceID = \"Secrets Manager\"\n")
	op := func(name string) string {
		return "package secretsmanager\n\nfunc (c *Client) " + name + "() {\n\tc.invokeOperation(ctx, \"" + name + "\", params, optFns, nil)\n}\n"
	}
	write("api_op_ListSecrets.go", op("ListSecrets"))
	write("api_op_DescribeSecret.go", op("DescribeSecret"))
	write("api_op_DescribeSecret_test.go", "package secretsmanager\n")
	s, err := readService(dir)
	if err != nil || s.id != "Secrets Manager" || strings.Join(s.ops, ",") != "DescribeSecret,ListSecrets" {
		t.Fatalf("%+v %v", s, err)
	}
	// A file whose operation is not its name is a layout the generator
	// does not know.
	write("api_op_GetSecretValue.go", op("GetSecret"))
	if _, err := readService(dir); err == nil {
		t.Fatal("a mismatched operation file was accepted")
	}
}

// The committed list is what the generator writes from the module cache:
// regenerate it (go generate ./cloudgaws) after changing the SDK version.
// The modules are read through the module cache alone; without them the
// test is skipped.
func TestGeneratedFileIsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skip(err)
	}
	out := filepath.Join(t.TempDir(), "gen.go")
	cmd := exec.Command("go", "run", ".", "-o", out)
	cmd.Env = append(os.Environ(), "GOPROXY=file://"+filepath.Join(strings.TrimSpace(string(cache)), "cache", "download"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("the generator cannot read the modules from the cache: %v\n%s", err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../sdkservices_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("sdkservices_gen.go is not what the generator writes: run go generate ./cloudgaws")
	}
}
