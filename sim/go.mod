module github.com/cloudg/cloudg/sim

go 1.24.0

require (
	github.com/aws/aws-sdk-go-v2 v1.48.0
	github.com/cloudg/cloudg v0.1.0
	github.com/cloudg/cloudg/cloudgaws v0.1.0
	github.com/failsafe-go/failsafe-go v0.9.8
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/time v0.14.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/aws/aws-sdk-go-v2/internal/configsources v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/endpoints/v2 v2.8.12 // indirect
	github.com/aws/aws-sdk-go-v2/internal/v4a v1.5.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/accept-encoding v1.13.25 // indirect
	github.com/aws/aws-sdk-go-v2/service/internal/presigned-url v1.14.12 // indirect
	github.com/aws/aws-sdk-go-v2/service/sts v1.52.0 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/text v0.28.0 // indirect
)

require (
	github.com/aws/smithy-go v1.28.9
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
)

replace github.com/cloudg/cloudg => ../

replace github.com/cloudg/cloudg/cloudgaws => ../cloudgaws
