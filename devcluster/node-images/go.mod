module annex.local/node-images

go 1.24
