package fleet

import (
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// passHooks passes go-redis's dials and pipelines on unchanged: embedded
// in a test's redis.Hook, which then only says what it does to a command
// (ProcessHook).
type passHooks struct{}

func (passHooks) DialHook(next redis.DialHook) redis.DialHook { return next }
func (passHooks) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
