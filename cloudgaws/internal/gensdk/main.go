// Command gensdk writes sdkservices_gen.go of package cloudgaws: the
// names of aws-sdk-go-v2's services, and the operations of some of them,
// against which cloudgaws checks the override keys of a configuration
// (ratelimit.aws.services.<service>[.<Operation>]). Run it from the
// cloudgaws module, after changing the SDK version it requires:
//
//	go generate ./cloudgaws
//
// (or, in the cloudgaws directory, go run ./internal/gensdk). It reads,
// through the go command and its module cache:
//
//   - the github.com/aws/aws-sdk-go-v2 module that the cloudgaws module
//     requires: its release log (CHANGELOG.md) names every service module
//     the SDK has released, newest release first, so that the first
//     mention of a module is its newest version. Each service is named as
//     cloudgaws names its scopes, from its package name (awsname.OfPackage;
//     the SDK names a package after its service ID, lower-cased without
//     spaces).
//   - the service modules that -ops names, downloaded at that version
//     with go mod download: the ServiceID constant of each
//     (api_client.go), which must give the same name, and its operations
//     (the name each api_op_*.go file invokes the operation with, the
//     name the SDK's middleware reports). -ops all reads every service
//     module; the default reads the services with built-in defaults in
//     the core and those the project's tests call.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/cloudg/cloudg/cloudgaws/internal/awsname"
)

const (
	sdkModule     = "github.com/aws/aws-sdk-go-v2"
	servicePrefix = sdkModule + "/service/"
)

// defaultOps are the service packages whose operations are listed: those
// with built-in defaults in the core (resilience's providerDefaults for
// aws), and those the project's tests and examples call.
const defaultOps = "ec2,iam,sts,organizations,controltower,route53,resourcegroupstaggingapi," +
	"cloudcontrol,cloudformation,lambda,secretsmanager,s3,dynamodb"

func main() {
	log.SetFlags(0)
	log.SetPrefix("gensdk: ")
	out := flag.String("o", "sdkservices_gen.go", "the file to write")
	ops := flag.String("ops", defaultOps, `the service packages whose operations to list, comma-separated, or "all"`)
	flag.Parse()

	root, err := module(sdkModule, "")
	if err != nil {
		log.Fatal(err)
	}
	changelog, err := os.ReadFile(filepath.Join(root.Dir, "CHANGELOG.md"))
	if err != nil {
		log.Fatal(err)
	}
	versions := serviceModules(changelog)
	if len(versions) == 0 {
		log.Fatalf("%s %s: its release log names no service module", sdkModule, root.Version)
	}
	want := strings.Split(*ops, ",")
	if *ops == "all" {
		want = want[:0]
		for pkg := range versions {
			want = append(want, pkg)
		}
	}
	sort.Strings(want)
	var listed []service
	for _, pkg := range want {
		v, ok := versions[pkg]
		if !ok {
			log.Fatalf("-ops: %s is not a service module of %s %s", pkg, sdkModule, root.Version)
		}
		m, err := module(servicePrefix+pkg, v)
		if err != nil {
			// A proxy that does not serve the logged version yet: the
			// newest it serves, said in the file.
			log.Printf("%v; reading the latest version served instead", err)
			if m, err = module(servicePrefix+pkg, "latest"); err != nil {
				log.Fatal(err)
			}
		}
		s, err := readService(m.Dir)
		if err != nil {
			log.Fatalf("%s@%s: %v", m.Path, m.Version, err)
		}
		if awsname.Squash(s.id) != pkg {
			log.Fatalf("%s@%s: service ID %q is not named after its package: the names derived from packages cannot be trusted", m.Path, m.Version, s.id)
		}
		s.pkg, s.version, s.name = pkg, m.Version, awsname.Name(s.id)
		if s.name != awsname.OfPackage(pkg) {
			log.Fatalf("%s: its ID names it %s, its package %s", pkg, s.name, awsname.OfPackage(pkg))
		}
		if i := slices.IndexFunc(listed, func(l service) bool { return l.name == s.name }); i >= 0 {
			// Two packages of one name (cloudwatchevents and eventbridge
			// are events): their operations together, under the first.
			listed[i].ops = append(listed[i].ops, s.ops...)
			slices.Sort(listed[i].ops)
			listed[i].ops = slices.Compact(listed[i].ops)
			continue
		}
		listed = append(listed, s)
	}
	src, err := render(root.Version, versions, listed)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// moduleInfo is what go mod download -json and go list -m -json say of a
// module.
type moduleInfo struct {
	Path, Version, Dir, Error string
}

// module locates path at version ("": the version the current module
// requires) in the module cache, downloading it if it is not there.
func module(path, version string) (moduleInfo, error) {
	if version == "" {
		var m moduleInfo
		if err := goJSON(&m, "list", "-m", "-json", path); err != nil {
			return m, err
		}
		if m.Dir != "" {
			return m, nil
		}
		version = m.Version
	}
	var m moduleInfo
	if err := goJSON(&m, "mod", "download", "-json", path+"@"+version); err != nil {
		return m, err
	}
	if m.Error != "" || m.Dir == "" {
		return m, fmt.Errorf("%s@%s: %s", path, version, m.Error)
	}
	return m, nil
}

func goJSON(v any, args ...string) error {
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil && len(b) == 0 {
		return fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return json.Unmarshal(b, v)
}

// entry is a module's line in the SDK's release log:
// * `github.com/aws/aws-sdk-go-v2/service/s3`: [v1.114.10](service/s3/CHANGELOG.md#...)
var entry = regexp.MustCompile("`" + regexp.QuoteMeta(servicePrefix) + "([a-z0-9]+)`: \\[(v[^\\]]+)\\]")

// serviceModules returns the service packages the release log names,
// each with its newest version (its first mention: the log is newest
// first).
func serviceModules(changelog []byte) map[string]string {
	versions := map[string]string{}
	for _, m := range entry.FindAllSubmatch(changelog, -1) {
		pkg, v := string(m[1]), string(m[2])
		if pkg == "internal" {
			continue
		}
		if _, seen := versions[pkg]; !seen {
			versions[pkg] = v
		}
	}
	return versions
}

// service is what a service module says of itself.
type service struct {
	pkg, version, id, name string
	ops                    []string
}

// readService reads a service module's ServiceID constant and the names
// of its operations.
func readService(dir string) (service, error) {
	var s service
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(dir, "api_client.go"), nil, 0)
	if err != nil {
		return s, err
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, sp := range g.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if n.Name == "ServiceID" && i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
							s.id, _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	if s.id == "" {
		return s, fmt.Errorf("no ServiceID constant in api_client.go")
	}
	files, err := filepath.Glob(filepath.Join(dir, "api_op_*.go"))
	if err != nil {
		return s, err
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		op, err := operation(fset, file)
		if err != nil {
			return s, err
		}
		s.ops = append(s.ops, op)
	}
	if len(s.ops) == 0 {
		return s, fmt.Errorf("no api_op_*.go file")
	}
	sort.Strings(s.ops)
	return s, nil
}

// operation returns the name an api_op_<Name>.go file invokes its
// operation with (c.invokeOperation(ctx, "<Name>", ...)), which must be
// the file's.
func operation(fset *token.FileSet, file string) (string, error) {
	want := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "api_op_"), ".go")
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		return "", err
	}
	var got string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || got != "" {
			return got == ""
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "invokeOperation" && len(call.Args) > 1 {
			if lit, ok := call.Args[1].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				got, _ = strconv.Unquote(lit.Value)
			}
		}
		return true
	})
	if got == "" {
		return "", fmt.Errorf("%s: no invokeOperation call", file)
	}
	if got != want {
		return "", fmt.Errorf("%s invokes %q", file, got)
	}
	return got, nil
}

// render writes the Go file.
func render(sdkVersion string, versions map[string]string, listed []service) ([]byte, error) {
	var b bytes.Buffer
	pkgs := make([]string, 0, len(versions))
	for pkg := range versions {
		pkgs = append(pkgs, pkg)
	}
	sort.Strings(pkgs)
	fmt.Fprintf(&b, "// Code generated by gensdk (go generate ./cloudgaws); DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "package cloudgaws\n\n")
	fmt.Fprintf(&b, "// sdkVersion is the release of %s whose release log names the\n// service modules of sdkServices.\n", sdkModule)
	fmt.Fprintf(&b, "const sdkVersion = %q\n\n", sdkVersion)
	fmt.Fprintf(&b, "// sdkServices maps each service package of the SDK (%d) to the name\n// of its service in scopes.\n", len(pkgs))
	fmt.Fprintf(&b, "var sdkServices = map[string]string{\n")
	for _, pkg := range pkgs {
		fmt.Fprintf(&b, "\t%q: %q,\n", pkg, awsname.OfPackage(pkg))
	}
	fmt.Fprintf(&b, "}\n\n")
	n := 0
	for _, s := range listed {
		n += len(s.ops)
	}
	fmt.Fprintf(&b, "// sdkOperations lists the operations of the services whose modules\n// were read (%d services, %d operations), by service name, sorted.\n", len(listed), n)
	fmt.Fprintf(&b, "var sdkOperations = map[string]sdkOps{\n")
	for _, s := range listed {
		fmt.Fprintf(&b, "\t%q: {%q, %q, []string{\n", s.name, s.pkg, s.version)
		line := "\t\t"
		for _, op := range s.ops {
			q := strconv.Quote(op) + ","
			if len(line)+len(q) > 100 {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				line = "\t\t"
			}
			line += q + " "
		}
		b.WriteString(strings.TrimRight(line, " ") + "\n")
		fmt.Fprintf(&b, "\t}},\n")
	}
	fmt.Fprintf(&b, "}\n")
	return format.Source(b.Bytes())
}
