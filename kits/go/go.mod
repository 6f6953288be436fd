module mesh/hook

go 1.19
