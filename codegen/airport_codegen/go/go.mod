module pyairport/goextract

go 1.22
