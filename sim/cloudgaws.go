package sim

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// installedStrategy is what a user of cloudgaws runs: an aws.Config with
// cloudgaws.Install at its defaults (the SDK's retry mode, attempts and
// backoff as cloudgaws sets them, the governor vetoing retries and pacing
// attempts), and one client's stack per call as an SDK operation builds
// it: the service metadata, cloudgaws's middleware, and the SDK's retry
// middleware (retry.Attempt) with the retryer the config gives one client,
// shared by all workers. The simulated provider is the handler in place of
// serialization, signing and HTTP.
type installedStrategy struct {
	g       *resilience.Governor
	cfg     aws.Config
	retryer aws.Retryer
	region  string
	scopes  []resilience.Scope
}

func newInstalledStrategy(sc *Scenario, clock Clock, controller string) (*installedStrategy, error) {
	gs, err := newGovernorStrategy(sc, clock, controller)
	if err != nil {
		return nil, err
	}
	s := &installedStrategy{g: gs.g, region: sc.Provider.Region, cfg: aws.Config{Region: sc.Provider.Region}}
	// The calls are EC2's in shape (sdkServiceID), but their scopes
	// are the provider's service, as cloudg-aimd's are.
	if err := cloudgaws.Install(&s.cfg, sc.Provider.Account, cloudgaws.WithGovernor(s.g), cloudgaws.WithConfig(sc.SDK),
		cloudgaws.WithServiceName(sdkServiceID, sc.Provider.Service)); err != nil {
		return nil, err
	}
	// Its rate is read where its calls are governed.
	for _, a := range sc.Workload.Actions {
		sp, err := cloudgaws.Scope(s.cfg, sdkServiceID, a)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(s.scopes, sp) {
			s.scopes = append(s.scopes, sp)
		}
	}
	s.retryer = s.cfg.Retryer()
	return s, nil
}

// sdkServiceID is the SDK's service ID of the installed strategy's calls,
// whose answers have EC2's shapes.
const sdkServiceID = "EC2"

func (s *installedStrategy) Call(ctx context.Context, action string, attempt func(context.Context) error) error {
	stack := middleware.NewStack(action, smithyhttp.NewStackRequest)
	err := stack.Initialize.Add(&awsmiddleware.RegisterServiceMetadata{
		ServiceID: sdkServiceID, SigningName: "ec2", Region: s.region, OperationName: action,
	}, middleware.Before)
	if err == nil {
		err = stack.Finalize.Add(retry.NewAttemptMiddleware(s.retryer, smithyhttp.RequestCloner), middleware.After)
	}
	for _, fn := range s.cfg.APIOptions {
		if err == nil {
			err = fn(stack)
		}
	}
	if err != nil {
		return err
	}
	h := middleware.DecorateHandler(middleware.HandlerFunc(func(ctx context.Context, _ any) (any, middleware.Metadata, error) {
		return nil, middleware.Metadata{}, attempt(ctx)
	}), stack)
	_, _, err = h.Handle(ctx, nil)
	return err
}

func (s *installedStrategy) Rate() float64 {
	return (&governorStrategy{g: s.g, scopes: s.scopes}).Rate()
}
func (s *installedStrategy) Close() {}
