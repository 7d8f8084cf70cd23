package cloudgaws

import (
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/cloudg/cloudg/cloudgaws/internal/awsname"
	"github.com/cloudg/cloudg/internal/scopenames"
	"github.com/cloudg/cloudg/internal/yamlconf"
)

//go:generate go run ./internal/gensdk

// Importing the package makes the core's configuration check
// (resilience.Config's Validate, and so resilience.ParseConfig, LoadConfig
// and Configure) refuse an AWS override key that names no service of the
// SDK, or an operation its service does not have, with the name meant
// when it is near: "ratelimit.aws.services.secretmanager: unknown AWS
// service (did you mean secretsmanager?)".
func init() { scopenames.Register("aws", checkKey) }

// sdkOps are the operations of a service module the list was generated
// from.
type sdkOps struct {
	pkg, version string
	ops          []string // sorted
}

// known is the index of the names the check accepts.
type known struct {
	names   map[string]bool   // the services' scope names
	aliases map[string]string // a package, or a name squashed, to its name: cloudwatchlogs is logs
	linked  map[string]string // the service packages this program links, to their versions
}

// knownNames indexes the generated list and the service modules the
// program links: a service newer than the list is known by its module.
var knownNames = sync.OnceValue(func() *known {
	k := &known{names: map[string]bool{}, aliases: map[string]string{}, linked: map[string]string{}}
	add := func(pkg, name string) {
		k.names[name] = true
		k.aliases[pkg] = name
		k.aliases[awsname.Squash(name)] = name
	}
	for pkg, name := range sdkServices {
		add(pkg, name)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for pkg, version := range linkedServices(bi.Deps) {
			add(pkg, awsname.OfPackage(pkg))
			k.linked[pkg] = version
		}
	}
	return k
})

// linkedServices yields the package name and version of each service
// module of the SDK among deps. A module replaced (by a fork, or a
// directory) is the SDK's service still, by the path it is imported as:
// the version is the replacement's, which is what is built ("" for a
// directory, whose operations the check then takes on trust).
func linkedServices(deps []*debug.Module) func(yield func(pkg, version string) bool) {
	return func(yield func(pkg, version string) bool) {
		for _, m := range deps {
			pkg, ok := strings.CutPrefix(m.Path, "github.com/aws/aws-sdk-go-v2/service/")
			if !ok || pkg == "internal" || strings.Contains(pkg, "/") {
				continue
			}
			version := m.Version
			if m.Replace != nil {
				version = m.Replace.Version
			}
			if !yield(pkg, version) {
				return
			}
		}
	}
}

// checkKey explains why the override key service[.operation] of
// provider aws matches no call of an SDK client, or returns "". The
// names are the scope names of aws-sdk-go-v2's services as its release
// log names them (sdkVersion) and of the service modules the program
// links; the operations those of the services whose modules the list was
// generated from (sdkOperations), unless the program links a newer minor
// version of the module, which may have more.
func checkKey(service, operation string) string {
	k := knownNames()
	if !k.names[service] {
		if name := k.suggest(service); name != "" {
			return "unknown AWS service (did you mean " + name + "?)"
		}
		return "unknown AWS service (scopes name a service as botocore does, ec2, logs, elbv2: those of aws-sdk-go-v2 " +
			sdkVersion + " and of the service modules this program links)"
	}
	if operation == "" {
		return ""
	}
	s, ok := sdkOperations[service]
	if !ok {
		return ""
	}
	if v, ok := k.linked[s.pkg]; ok && (v == "" || newerMinor(v, s.version)) {
		return "" // a module newer than the list, or replaced by a directory, of a version unknown
	}
	if _, found := slices.BinarySearch(s.ops, operation); found {
		return ""
	}
	for _, op := range s.ops {
		if strings.EqualFold(op, operation) {
			return "unknown operation of " + service + " (did you mean " + op + "?)"
		}
	}
	if op := yamlconf.Nearest(operation, slices.Values(s.ops)); op != "" {
		return "unknown operation of " + service + " (did you mean " + op + "?)"
	}
	return "unknown operation of " + service + " (" + s.pkg + " " + s.version + " has no such operation)"
}

// suggest returns the service name meant by an unknown one: the name of a
// package (cloudwatchlogs is logs) or of a name spelt with hyphens or
// spaces (secrets-manager), else the nearest name (secretmanager).
func (k *known) suggest(service string) string {
	if name, ok := k.aliases[awsname.Squash(service)]; ok {
		return name
	}
	names := slices.Collect(maps.Keys(k.names))
	sort.Strings(names)
	if name := yamlconf.Nearest(service, slices.Values(names)); name != "" {
		return name
	}
	// A misspelt package: elasticloadbalancingv3.
	pkgs := slices.Collect(maps.Keys(k.aliases))
	sort.Strings(pkgs)
	if pkg := yamlconf.Nearest(awsname.Squash(service), slices.Values(pkgs)); pkg != "" {
		return k.aliases[pkg]
	}
	return ""
}

// newerMinor reports whether the module version v (v1.345.0) is of a
// newer minor version than w (v1.344.3): the SDK adds operations in minor
// versions.
func newerMinor(v, w string) bool {
	a, b := majorMinor(v), majorMinor(w)
	return a[0] > b[0] || a[0] == b[0] && a[1] > b[1]
}

func majorMinor(v string) [2]int {
	v = strings.TrimPrefix(v, "v")
	v, _, _ = strings.Cut(v, "-")
	parts := strings.SplitN(v, ".", 3)
	var out [2]int
	for i := 0; i < 2 && i < len(parts); i++ {
		out[i], _ = strconv.Atoi(parts[i])
	}
	return out
}
