module github.com/dsh-go/dsh

go 1.26

require (
	github.com/asaskevich/EventBus v0.0.0-20200907212545-49d423059eef
	github.com/dlclark/regexp2/v2 v2.5.2
	github.com/dop251/goja v0.0.0-20260917113740-793a2a65c13b
	github.com/evanw/esbuild v0.28.2
	github.com/rs/zerolog v1.35.1
	github.com/tidwall/gjson v1.20.2
	go.uber.org/goleak v1.3.0
)

require (
	github.com/go-sourcemap/sourcemap v2.1.3+incompatible // indirect
	github.com/google/pprof v0.0.0-20230207041349-798e818bf904 // indirect
	github.com/mattn/go-colorable v0.1.14 // indirect
	github.com/mattn/go-isatty v0.0.20 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.3.0 // indirect
	golang.org/x/sys v0.29.0 // indirect
	golang.org/x/text v0.3.8 // indirect
)
