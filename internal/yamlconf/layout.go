package yamlconf

import (
	"errors"

	"go.yaml.in/yaml/v3"
)

// The layout of a configuration document. A whole configuration has
// sections at its top level: ratelimit (the governor's, read by
// resilience.ParseConfig and liveop.ParseConfig), aws (the AWS SDK's own
// retry settings, read by cloudgaws.ParseConfig), and any others a
// program keeps there. The governor's section may also stand alone, as the
// whole document (enabled, aws, azure, gcp and live_* at its top level).
//
// A document with a ratelimit key is a whole configuration. One without
// it is the governor's section alone, unless its aws key holds retry_mode,
// which only the SDK's section has: it is then a whole configuration
// without a ratelimit section (aws: {retry_mode: standard} is the SDK's,
// and leaves the governor at its defaults). The rule looks for a key that
// proves the SDK's section rather than for keys the governor lacks, so
// that a misspelt key of a governor section standing alone is still
// reported, not taken as the sign of another section.
//
// sdkKeys are the settings of the SDK's section; sdkOnlyKey is the one the
// governor's aws section lacks.
var sdkKeys = map[string]bool{"max_retries": true, "retry_mode": true}

const sdkOnlyKey = "retry_mode"

// RatelimitSection returns the governor's section of a document's top
// node (see Document): the value of its ratelimit key, the node itself
// when it is the section alone, or nil for a whole configuration without a
// ratelimit section. In that last case every key of the top-level aws
// section must be an SDK setting: a governor setting beside retry_mode
// would otherwise be ignored by both readers, so it is an error naming the
// key path.
func RatelimitSection(top *yaml.Node) (*yaml.Node, error) {
	if sec := Section(top, "ratelimit"); sec != nil {
		return sec, nil
	}
	sdk := Section(top, "aws")
	if sdk == nil || sdk.Kind != yaml.MappingNode || Section(sdk, sdkOnlyKey) == nil {
		return top, nil
	}
	var errs []error
	for i := 0; i+1 < len(sdk.Content); i += 2 {
		if k := deref(sdk.Content[i]).Value; !sdkKeys[k] {
			errs = append(errs, errorf("aws."+k, "not a setting of the AWS SDK's section, which retry_mode makes this "+
				"top-level aws (max_retries, retry_mode); the governor's settings go under ratelimit.aws"))
		}
	}
	return nil, errors.Join(errs...)
}
