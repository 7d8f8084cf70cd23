package sim

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/internal/yamlconf"
	"github.com/cloudg/cloudg/resilience"
)

// LoadFile reads a scenario from a YAML file (see Parse).
func LoadFile(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// Parse reads a scenario from YAML. The scenario starts as the built-in one
// named by the key base (default "default") and the file's keys replace its
// settings; the ratelimit section is the governor's configuration, read by
// resilience.ParseConfig, and the aws section cloudgaws's, read by
// cloudgaws.ParseConfig. The data must be one YAML document holding a
// mapping. Unknown keys, duplicate keys and bad values are errors (*Error,
// the ratelimit section's included) naming the key path, such as
// "provider.changes[0].at_seconds: must be a number of seconds or a
// duration". A file based on an estate scenario (estate-uniform, ...)
// keeps the estate's scopes, limits and calls: it may set workers, the
// provider's latency, pauses, dead actions and tenant (by scope key,
// EstateKey), the governor and the rest, not workload.calls,
// workload.actions, or the provider's service, account, region, rate,
// burst or actions; the scope it pauses or kills, one at most, is the one
// the estate's figures set apart (Estate.Affected).
//
//	name: my-estate
//	base: default
//	seed: 1
//	time_limit_seconds: 3600
//	strategies: [aws-standard, cloudg-aimd, cloudg-goodput, cloudg-aws]
//	workload:
//	  workers: 64
//	  calls: 2400
//	  actions: [DescribeInstances, DescribeVolumes]
//	provider:
//	  service: ec2
//	  rate: 10              # true refill per action, rps
//	  burst: 100
//	  actions: {DescribeVolumes: {rate: 5, burst: 50}}
//	  changes: [{at_seconds: 60, rate: 8}]   # optional action:, burst:
//	  tenant: {rate: 5}     # optional action:, actions: [...], share: (of the limit, instead of rate),
//	                        # from_seconds:, until_seconds:, walk: {every_seconds: 10, step: 0.25, start: 0.5}
//	  pauses: [{action: DescribeVolumes, from_seconds: 0, to_seconds: 60, at_first: true}]
//	  dead: [DescribeVolumes] # throttled for good
//	  retry_after: false
//	  latency: {median_ms: 50, p99_ms: 150}
//	  transient_error_rate: 0.01
//	  outages: [{from_seconds: 30, to_seconds: 60}]
//	client:                 # the static and failsafe-go strategies
//	  rate: 20
//	  burst: 100
//	  max_retries: 8
//	  base_delay_seconds: 0.5
//	  max_backoff_seconds: 60
//	  breaker_threshold: 5
//	  breaker_delay_seconds: 60
//	ratelimit:              # the governor (cloudg strategies)
//	  aws: {max_rps: 20, breaker_wait: true}
//	aws:                    # cloudgaws (cloudg-aws strategies)
//	  retry_mode: standard
//	  max_retries: 10
func Parse(data []byte) (*Scenario, error) {
	root, err := yamlconf.Document(data, "(document)")
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, &Error{Path: "(document)", Msg: "empty scenario"}
	}
	baseName := ScenarioDefault
	if n := yamlconf.Section(root, "base"); n != nil {
		baseName = n.Value
	}
	sc, ok := Builtin(baseName)
	if !ok {
		return nil, &Error{Path: "base", Msg: fmt.Sprintf("unknown scenario %q", baseName)}
	}
	sc.Model = nil // the model's figures belong to the built-in scenario only
	if yamlconf.Section(root, "description") == nil {
		sc.Description = "" // the base's would describe another scenario
	}
	p := parser{}
	err = p.mapping(root, "", map[string]func(*yaml.Node, string) error{
		"base":        func(*yaml.Node, string) error { return nil },
		"name":        p.str(&sc.Name),
		"description": p.str(&sc.Description),
		"seed":        p.uint(&sc.Seed),
		"time_limit_seconds": func(n *yaml.Node, path string) error {
			// A scenario built in code takes 0 for an hour; a file
			// that says 0 means something else (no limit, or none at
			// all), which no run could honour.
			if err := p.seconds(&sc.TimeLimit)(n, path); err != nil {
				return err
			}
			if sc.TimeLimit <= 0 {
				return &Error{Path: path, Msg: "must be > 0"}
			}
			return nil
		},
		"strategies": p.strs(&sc.Strategies),
		"workload": func(n *yaml.Node, path string) error {
			w := &sc.Workload
			fields := map[string]func(*yaml.Node, string) error{
				"workers": p.int(&w.Workers),
				"calls":   p.int(&w.Calls),
				"actions": p.strs(&w.Actions),
			}
			if sc.Estate != nil {
				builtIn(fields, baseName, "calls", "actions")
			}
			return p.mapping(n, path, fields)
		},
		"provider": func(n *yaml.Node, path string) error {
			fields := p.provider(&sc.Provider)
			if sc.Estate != nil {
				builtIn(fields, baseName, "service", "account", "region", "rate", "burst", "actions")
			}
			return p.mapping(n, path, fields)
		},
		"client": func(n *yaml.Node, path string) error {
			c := &sc.Client
			return p.mapping(n, path, map[string]func(*yaml.Node, string) error{
				"rate":                  p.float(&c.Rate),
				"burst":                 p.float(&c.Burst),
				"max_retries":           p.int(&c.MaxRetries),
				"base_delay_seconds":    p.seconds(&c.BaseDelay),
				"max_backoff_seconds":   p.seconds(&c.MaxBackoff),
				"breaker_threshold":     p.int(&c.BreakerThreshold),
				"breaker_delay_seconds": p.seconds(&c.BreakerDelay),
			})
		},
		"aws": func(*yaml.Node, string) error {
			// cloudgaws.ParseConfig reads the aws key of the whole document;
			// its errors name aws.<key>.
			cfg, err := cloudgaws.ParseConfig(data)
			if err != nil {
				return err
			}
			sc.SDK = cfg
			return nil
		},
		"ratelimit": func(*yaml.Node, string) error {
			// resilience.ParseConfig reads the ratelimit key of the whole
			// document; its errors name ratelimit.<key path>.
			cfg, err := resilience.ParseConfig(data)
			if err != nil {
				return err
			}
			sc.Governor = cfg
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if sc.Estate != nil {
		// The scope the figures set apart is the one the file pauses
		// or kills, not the base's.
		var keys []string
		for _, k := range slices.Concat(pauseActions(sc.Provider.Pauses), sc.Provider.Dead) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
		switch len(keys) {
		case 0:
			sc.Estate.Affected = ""
		case 1:
			sc.Estate.Affected = keys[0]
		default:
			return nil, &Error{Path: "provider", Msg: fmt.Sprintf("an estate's figures set one paused or dead scope apart; pauses and dead name %d (%s)", len(keys), strings.Join(keys, ", "))}
		}
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

// pauseActions returns the action of each pause.
func pauseActions(ps []Pause) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Action)
	}
	return out
}

// builtIn makes keys of fields errors: an estate's scopes, limits and
// calls are its own.
func builtIn(fields map[string]func(*yaml.Node, string) error, base string, keys ...string) {
	for _, k := range keys {
		fields[k] = func(_ *yaml.Node, path string) error {
			return &Error{Path: path, Msg: fmt.Sprintf("the estate of %s sets it", base)}
		}
	}
}

func (p parser) provider(ps *ProviderSpec) map[string]func(*yaml.Node, string) error {
	return map[string]func(*yaml.Node, string) error{
		"service": p.str(&ps.Service),
		"account": p.str(&ps.Account),
		"region":  p.str(&ps.Region),
		"rate":    p.float(&ps.Rate),
		"burst":   p.float(&ps.Burst),
		"actions": func(n *yaml.Node, path string) error {
			if n.Kind != yaml.MappingNode {
				return &Error{Path: path, Msg: "must be a mapping of action to {rate, burst}"}
			}
			ps.Per = map[string]Limit{}
			for i := 0; i+1 < len(n.Content); i += 2 {
				name := n.Content[i].Value
				if _, dup := ps.Per[name]; dup {
					return &Error{Path: yamlconf.KeyPath(path, name), Msg: "duplicate key"}
				}
				var l Limit
				if err := p.mapping(n.Content[i+1], yamlconf.KeyPath(path, name), map[string]func(*yaml.Node, string) error{
					"rate":  p.float(&l.Rate),
					"burst": p.float(&l.Burst),
				}); err != nil {
					return err
				}
				ps.Per[name] = l
			}
			return nil
		},
		"changes": func(n *yaml.Node, path string) error {
			ps.Changes = nil
			return p.sequence(n, path, func(n *yaml.Node, path string) error {
				var c Change
				if err := p.mapping(n, path, map[string]func(*yaml.Node, string) error{
					"at_seconds": p.seconds(&c.At),
					"action":     p.str(&c.Action),
					"rate":       p.float(&c.Rate),
					"burst":      p.float(&c.Burst),
				}); err != nil {
					return err
				}
				ps.Changes = append(ps.Changes, c)
				return nil
			})
		},
		"tenant": func(n *yaml.Node, path string) error {
			t := &Tenant{}
			ps.Tenant = t
			return p.mapping(n, path, map[string]func(*yaml.Node, string) error{
				"rate":          p.float(&t.Rate),
				"share":         p.float(&t.Share),
				"action":        p.str(&t.Action),
				"actions":       p.strs(&t.Actions),
				"from_seconds":  p.seconds(&t.From),
				"until_seconds": p.seconds(&t.Until),
				"walk": func(n *yaml.Node, path string) error {
					w := &Walk{}
					t.Walk = w
					return p.mapping(n, path, map[string]func(*yaml.Node, string) error{
						"every_seconds": p.seconds(&w.Every),
						"step":          p.float(&w.Step),
						"start":         p.float(&w.Start),
					})
				},
			})
		},
		"pauses": func(n *yaml.Node, path string) error {
			ps.Pauses = nil
			return p.sequence(n, path, func(n *yaml.Node, path string) error {
				var w Pause
				if err := p.mapping(n, path, map[string]func(*yaml.Node, string) error{
					"action":       p.str(&w.Action),
					"from_seconds": p.seconds(&w.From),
					"to_seconds":   p.seconds(&w.To),
					"at_first":     p.bool(&w.AtFirst),
				}); err != nil {
					return err
				}
				ps.Pauses = append(ps.Pauses, w)
				return nil
			})
		},
		"dead":        p.strs(&ps.Dead),
		"retry_after": p.bool(&ps.RetryAfter),
		"latency": func(n *yaml.Node, path string) error {
			return p.mapping(n, path, map[string]func(*yaml.Node, string) error{
				"median_ms": p.millis(&ps.LatencyMedian),
				"p99_ms":    p.millis(&ps.LatencyP99),
			})
		},
		"transient_error_rate": p.float(&ps.TransientRate),
		"outages": func(n *yaml.Node, path string) error {
			ps.Outages = nil
			return p.sequence(n, path, func(n *yaml.Node, path string) error {
				var w Window
				if err := p.mapping(n, path, map[string]func(*yaml.Node, string) error{
					"from_seconds": p.seconds(&w.From),
					"to_seconds":   p.seconds(&w.To),
				}); err != nil {
					return err
				}
				ps.Outages = append(ps.Outages, w)
				return nil
			})
		},
	}
}

// parser decodes yaml nodes into a scenario, with key paths in its errors.
// It walks the nodes itself rather than through yamlconf.Decoder: a
// scenario has lists (changes, outages, actions), takes YAML 1.1 booleans
// (yes, on) and any scalar as a string, and its messages name what a value
// must be ("must be a number, not \"fast\"").
type parser struct{}

func (parser) mapping(n *yaml.Node, path string, fields map[string]func(*yaml.Node, string) error) error {
	if n.Kind != yaml.MappingNode {
		if path == "" {
			path = "(document)"
		}
		return &Error{Path: path, Msg: "must be a mapping"}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i].Value
		kp := yamlconf.KeyPath(path, key)
		f, ok := fields[key]
		if !ok {
			return &Error{Path: kp, Msg: "unknown key"}
		}
		if seen[key] {
			return &Error{Path: kp, Msg: "duplicate key"}
		}
		seen[key] = true
		if err := f(n.Content[i+1], kp); err != nil {
			return err
		}
	}
	return nil
}

func (parser) sequence(n *yaml.Node, path string, each func(*yaml.Node, string) error) error {
	if n.Kind != yaml.SequenceNode {
		return &Error{Path: path, Msg: "must be a list"}
	}
	for i, c := range n.Content {
		if err := each(c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

func scalar(n *yaml.Node, path, what string) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", &Error{Path: path, Msg: "must be " + what}
	}
	return n.Value, nil
}

func (parser) str(dst *string) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		v, err := scalar(n, path, "a string")
		*dst = v
		return err
	}
}

func (p parser) strs(dst *[]string) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		*dst = nil
		return p.sequence(n, path, func(n *yaml.Node, path string) error {
			v, err := scalar(n, path, "a string")
			*dst = append(*dst, v)
			return err
		})
	}
}

func number(n *yaml.Node, path string) (float64, error) {
	v, err := scalar(n, path, "a number")
	if err != nil {
		return 0, err
	}
	f, perr := strconv.ParseFloat(v, 64)
	if perr != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, &Error{Path: path, Msg: fmt.Sprintf("must be a number, not %q", v)}
	}
	if f < 0 {
		return 0, &Error{Path: path, Msg: "must be >= 0"}
	}
	return f, nil
}

func (parser) float(dst *float64) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		f, err := number(n, path)
		*dst = f
		return err
	}
}

func (parser) int(dst *int) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		f, err := number(n, path)
		if err == nil && (f != math.Trunc(f) || f > math.MaxInt32) {
			return &Error{Path: path, Msg: "must be a whole number"}
		}
		*dst = int(f)
		return err
	}
}

func (parser) uint(dst *uint64) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		v, err := scalar(n, path, "a whole number")
		if err != nil {
			return err
		}
		u, perr := strconv.ParseUint(v, 10, 64)
		if perr != nil {
			return &Error{Path: path, Msg: fmt.Sprintf("must be a whole number, not %q", v)}
		}
		*dst = u
		return nil
	}
}

func (parser) bool(dst *bool) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		v, err := scalar(n, path, "true or false")
		if err != nil {
			return err
		}
		switch v {
		case "true", "True", "TRUE", "yes", "on":
			*dst = true
		case "false", "False", "FALSE", "no", "off":
			*dst = false
		default:
			return &Error{Path: path, Msg: fmt.Sprintf("must be true or false, not %q", v)}
		}
		return nil
	}
}

// seconds reads a number of seconds or a Go duration string ("90s").
func (parser) seconds(dst *time.Duration) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		v, err := scalar(n, path, "a number of seconds or a duration")
		if err != nil {
			return err
		}
		if f, perr := strconv.ParseFloat(v, 64); perr == nil && f >= 0 && f < 1e9 {
			*dst = time.Duration(f * float64(time.Second))
			return nil
		}
		if d, perr := time.ParseDuration(v); perr == nil && d >= 0 {
			*dst = d
			return nil
		}
		return &Error{Path: path, Msg: fmt.Sprintf("must be a number of seconds or a duration, not %q", v)}
	}
}

func (parser) millis(dst *time.Duration) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		f, err := number(n, path)
		*dst = time.Duration(f * float64(time.Millisecond))
		return err
	}
}
