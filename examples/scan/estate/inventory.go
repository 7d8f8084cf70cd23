package estate

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// Sizes is how many resources an estate holds: per account and region for
// the regional services, per account for IAM. It is a plain value that
// several goroutines may read at once while none changes it. The zero
// Sizes, in a Config, means DefaultSizes: no estate holds nothing at
// all.
type Sizes struct {
	Instances      int // EC2 instances, one per reservation
	VPCs           int
	Subnets        int
	SecurityGroups int
	Secrets        int // Secrets Manager secrets
	Tables         int // DynamoDB tables
	Roles          int // IAM roles, per account
}

// DefaultSizes are the sizes of an estate whose Config leaves Sizes zero.
var DefaultSizes = Sizes{Instances: 30, VPCs: 3, Subnets: 12, SecurityGroups: 8, Secrets: 38, Tables: 20, Roles: 36}

// The generated resources. Every name and id is made of letters, digits
// and dashes, so the protocols write them without escaping.
type (
	instance struct {
		id, reservation, image, kind, vpc, subnet, ip, zone, name string
	}
	vpc    struct{ id, cidr string }
	subnet struct {
		id, vpc, cidr, zone string
	}
	group  struct{ id, name, vpc string }
	secret struct {
		name, arn string
		changed   time.Time
	}
	table struct {
		name, arn, id string
		items         int64
		created       time.Time
	}
	role struct {
		name, id, arn string
		created       time.Time
	}
)

// regional is what one account holds in one region.
type regional struct {
	instances []instance
	vpcs      []vpc
	subnets   []subnet
	groups    []group
	secrets   []secret
	tables    []table
}

// global is what one account holds outside regions: its IAM roles.
type global struct {
	roles []role
}

// epoch is the date the generated resources are created after.
var epoch = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)

// rngFor is the random source of one part of the estate: the same seed and
// key always give the same resources.
func rngFor(seed uint64, key string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(key))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// hexID is prefix followed by n random hex digits.
func hexID(r *rand.Rand, prefix string, n int) string {
	const digits = "0123456789abcdef"
	b := []byte(prefix)
	for range n {
		b = append(b, digits[r.IntN(16)])
	}
	return string(b)
}

// upperID is prefix followed by n random upper-case letters and digits, the
// form of IAM's unique ids.
func upperID(r *rand.Rand, prefix string, n int) string {
	const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	b := []byte(prefix)
	for range n {
		b = append(b, digits[r.IntN(len(digits))])
	}
	return string(b)
}

var (
	nouns         = []string{"billing", "orders", "search", "ledger", "auth", "media", "reports", "events", "catalog", "mail"}
	instanceTypes = []string{"t3.micro", "t3.large", "m6i.xlarge", "c7g.2xlarge", "r6i.large"}
)

func name(r *rand.Rand, i int) string {
	return fmt.Sprintf("%s-%03d", nouns[r.IntN(len(nouns))], i)
}

// when is a random time in the two years after epoch, to the second.
func when(r *rand.Rand) time.Time {
	return epoch.Add(time.Duration(r.IntN(2*365*24*3600)) * time.Second)
}

func genRegional(seed uint64, sz Sizes, account, region string) *regional {
	r := rngFor(seed, account+"/"+region)
	g := &regional{}
	zone := func() string { return region + string(rune('a'+r.IntN(3))) }
	for i := range sz.VPCs {
		g.vpcs = append(g.vpcs, vpc{id: hexID(r, "vpc-", 17), cidr: fmt.Sprintf("10.%d.0.0/16", i)})
	}
	for i := range sz.Subnets {
		v := "vpc-none"
		if len(g.vpcs) > 0 {
			v = g.vpcs[i%len(g.vpcs)].id
		}
		g.subnets = append(g.subnets, subnet{id: hexID(r, "subnet-", 17), vpc: v, cidr: fmt.Sprintf("10.%d.%d.0/24", i%max(1, len(g.vpcs)), i), zone: zone()})
	}
	for i := range sz.SecurityGroups {
		v := "vpc-none"
		if len(g.vpcs) > 0 {
			v = g.vpcs[i%len(g.vpcs)].id
		}
		g.groups = append(g.groups, group{id: hexID(r, "sg-", 17), name: name(r, i), vpc: v})
	}
	for i := range sz.Instances {
		in := instance{
			id: hexID(r, "i-", 17), reservation: hexID(r, "r-", 17), image: hexID(r, "ami-", 17),
			kind: instanceTypes[r.IntN(len(instanceTypes))], vpc: "vpc-none", subnet: "subnet-none",
			ip: fmt.Sprintf("10.0.%d.%d", i/250, 4+i%250), zone: zone(), name: name(r, i),
		}
		if len(g.subnets) > 0 {
			s := g.subnets[r.IntN(len(g.subnets))]
			in.vpc, in.subnet, in.zone = s.vpc, s.id, s.zone
		}
		g.instances = append(g.instances, in)
	}
	for i := range sz.Secrets {
		n := fmt.Sprintf("%s/%s", name(r, i), hexID(r, "", 4))
		g.secrets = append(g.secrets, secret{
			name: n, arn: fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-%s", region, account, n, upperID(r, "", 6)),
			changed: when(r),
		})
	}
	for i := range sz.Tables {
		n := name(r, i)
		g.tables = append(g.tables, table{
			name: n, arn: fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", region, account, n),
			id: hexID(r, "", 32), items: r.Int64N(1_000_000), created: when(r),
		})
	}
	return g
}

func genGlobal(seed uint64, sz Sizes, account string) *global {
	r := rngFor(seed, account)
	g := &global{}
	for i := range sz.Roles {
		n := name(r, i) + "-role"
		g.roles = append(g.roles, role{
			name: n, id: upperID(r, "AROA", 17), arn: fmt.Sprintf("arn:aws:iam::%s:role/%s", account, n), created: when(r),
		})
	}
	return g
}
