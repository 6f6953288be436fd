module mesh/examples/rabbitmq-hook

go 1.19

require mesh/hook v0.0.0

replace mesh/hook => ../../../kits/go
