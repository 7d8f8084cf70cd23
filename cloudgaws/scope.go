package cloudgaws

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/cloudg/cloudg/cloudgaws/internal/awsname"
	"github.com/cloudg/cloudg/resilience"
)

// ErrNotInstalled is Scope's error for a config Install has not
// instrumented.
var ErrNotInstalled = errors.New("cloudgaws: the config is not installed")

// Scope returns the scope in which a call of a client made from cfg is
// governed, aws/<account>/<region>/<service>/<operation>, as the
// installation's middleware computes it: the account Install recorded on
// cfg, cfg's region as botocore names a client's region (the name of the
// partition's global endpoint for a global service: IAM made in any region
// of the aws partition is aws-global, in aws-cn aws-cn-global, and in
// the name of one of its global endpoints, aws-us-gov-global, that
// endpoint's; a FIPS pseudo-region, fips-us-east-1 or us-east-1-fips, is
// its region, us-east-1, as the SDK reads it; a region that is not plain
// text, as one read from a file with its newline, is none, shown as *),
// the service's botocore-style name,
// and operation, the SDK's operation name ("DescribeVpcs"). service is
// the SDK's service ID,
// the ServiceID constant of the client's package (ec2.ServiceID,
// secretsmanager.ServiceID, which is "Secrets Manager"), named by
// ServiceName and the installation's WithServiceName overrides; a scope's
// service name (secretsmanager) names itself. A client or call whose
// options set another region is governed in that region: pass a cfg with
// it. Scope reads cfg and changes nothing, here or in the governor; a
// config Install has not instrumented returns ErrNotInstalled.
//
// A scheduler asks the governor how long such a call would wait now, and
// gives its worker to another task when the scope cannot go:
//
//	scope, err := cloudgaws.Scope(cfg, ec2.ServiceID, "DescribeVpcs")
//	if err != nil { ... }
//	if wait, why := gov.Delay(scope); why != nil {
//		requeue(task, wait) // resilience.ErrCircuitOpen, ErrNoToken or ErrNoSlot
//	}
func Scope(cfg aws.Config, service, operation string) (resilience.Scope, error) {
	inst := installed(cfg)
	if inst == nil {
		return resilience.Scope{}, ErrNotInstalled
	}
	name, ok := inst.names[service]
	if !ok {
		name = ServiceName(service)
	}
	return resilience.Scope{Provider: provider, Account: inst.account, Region: awsname.Region(name, cfg.Region), Service: name, Operation: operation}, nil
}

// installed returns the latest installation recorded on cfg, or nil.
func installed(cfg aws.Config) *installation {
	for i := len(cfg.ConfigSources) - 1; i >= 0; i-- {
		if inst, ok := cfg.ConfigSources[i].(*installation); ok {
			return inst
		}
	}
	return nil
}
