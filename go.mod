module github.com/vkgrad/vkgrad

go 1.26.0

require (
	github.com/chewxy/math32 v1.11.1
	github.com/ebitengine/purego v0.11.3
	github.com/rs/zerolog v1.35.1
	github.com/spf13/pflag v1.0.10
	github.com/tiktoken-go/tokenizer v0.10.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/dlclark/regexp2/v2 v2.5.1 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
)
