package cloudgaws_test

import (
	"os"
	"strings"
	"testing"

	"github.com/cloudg/cloudg/cloudgaws"
	"github.com/cloudg/cloudg/internal/doctest"
	"github.com/cloudg/cloudg/resilience"
)

// The lines of docs/configuration.md's Validation block that only a
// program importing cloudgaws writes are what it writes, word for word:
// an AWS service or operation the SDK does not have, refused by
// resilience.ParseConfig once cloudgaws is imported, and a mistake in the
// SDK's own section (aws.max_retires), refused by cloudgaws.ParseConfig.
// The block is read from the file; its other lines are the governor's,
// checked by resilience's TestTheDocumentedConfigErrorsAreTheCodes.
func TestTheDocumentedErrorsOfTheSDKsNames(t *testing.T) {
	data, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(data), "\n## Validation\n")
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := doctest.Blocks(section, "")
	if len(blocks) == 0 {
		t.Fatal("docs/configuration.md: the Validation section has no block of error lines")
	}
	var gov, sdk []string
	if _, err := resilience.ParseConfig([]byte("aws: {services: {secretmanager: {max_rps: 2}, ec2.DescribeInstance: {max_rps: 1}}}\n")); err != nil {
		gov = strings.Split(err.Error(), "\n")
	}
	if _, err := cloudgaws.ParseConfig([]byte("ratelimit: {enabled: true}\naws: {max_retires: 3}\n")); err != nil {
		sdk = strings.Split(err.Error(), "\n")
	}
	names, sections := 0, 0
	for _, line := range strings.Split(strings.TrimSuffix(blocks[0].Text, "\n"), "\n") {
		switch {
		case !strings.HasPrefix(line, "ratelimit."):
			sections++
			if !doctest.Quotes(line, sdk) {
				t.Errorf("docs/configuration.md's Validation block shows\n  %s\ncloudgaws.ParseConfig writes\n  %s", line, strings.Join(sdk, "\n  "))
			}
		case strings.Contains(line, ": unknown AWS service") || strings.Contains(line, ": unknown operation of "):
			names++
			if !doctest.Quotes(line, gov) {
				t.Errorf("docs/configuration.md's Validation block shows\n  %s\nresilience.ParseConfig, with cloudgaws imported, writes\n  %s", line, strings.Join(gov, "\n  "))
			}
		}
	}
	if names == 0 || sections == 0 {
		t.Errorf("docs/configuration.md's Validation block has %d lines of AWS names and %d of the SDK's section, want some of each", names, sections)
	}
}
