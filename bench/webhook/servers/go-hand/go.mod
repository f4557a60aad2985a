module annex.dev/bench/webhook/go-hand

go 1.26.0
