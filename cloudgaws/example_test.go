package cloudgaws_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/resilience"
)

// One line puts every client made from a config under the process
// governor. (The endpoint here is a stand-in for EC2.)
func ExampleInstall() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<DescribeVpcsResponse><vpcSet><item><vpcId>vpc-0123</vpcId></item></vpcSet></DescribeVpcsResponse>`)
	}))
	defer srv.Close()
	cfg := aws.Config{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret"}, nil
		}),
	}

	cloudgaws.Install(&cfg, "123456789012")

	ctx, stats := resilience.WithStats(context.Background())
	out, err := ec2.NewFromConfig(cfg).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(aws.ToString(out.Vpcs[0].VpcId))
	fmt.Println(resilience.Default().Summary(stats).Scopes["aws/123456789012/us-east-1/ec2"].Calls, "call")
	// Output:
	// vpc-0123
	// 1 call
}

// The SDK's retry settings come from the top-level aws section of the
// configuration file.
func ExampleParseConfig() {
	doc := []byte(`
aws:
  max_retries: 3
  retry_mode: standard
ratelimit:
  aws:
    max_retries: 8
`)
	c, err := cloudgaws.ParseConfig(doc)
	fmt.Println(*c.MaxRetries, c.RetryMode, err)

	_, err = cloudgaws.ParseConfig([]byte("aws:\n  retry_mode: fast\n"))
	fmt.Println(err)
	// Output:
	// 3 standard <nil>
	// aws.retry_mode: unknown retry mode "fast" (standard or adaptive)
}
