package liveop_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cloudg/cloudg/liveop"
)

func Example() {
	// One guard per process: one collection per scope, two in all, two
	// minutes of cooldown after each.
	g, err := liveop.New(liveop.Config{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	scope := "aws/123456789012"
	req := liveop.Request{
		Key:    liveop.Key("scan", map[string]any{"scope": scope, "services": []string{"ec2", "s3"}}),
		Scopes: []string{scope},
		Caller: "agent",
	}
	collect := func(ctx context.Context) (int, error) {
		return 42, nil // walk the estate through the governor
	}

	n, err := liveop.Run(ctx, g, req, collect)
	fmt.Println(n, err)

	// Right after, the scope is cooling down: the caller is told when to
	// retry and to use its cached dataset meanwhile.
	_, err = liveop.Run(ctx, g, req, collect)
	fmt.Println(err)
	var refused *liveop.RefusedError
	if errors.As(err, &refused) {
		fmt.Println(refused.Reason, refused.Scopes, refused.RetryAfter.Round(time.Second), errors.Is(err, liveop.ErrCooldown))
	}
	// Output:
	// 42 <nil>
	// live collection of aws/123456789012 ran recently; cooling down, retry in 120s or use the cached dataset
	// cooldown [aws/123456789012] 2m0s true
}
