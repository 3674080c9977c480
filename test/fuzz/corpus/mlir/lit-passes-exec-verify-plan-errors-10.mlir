module attributes {otc.arena_bytes = 256 : i64, otc.buffers = [{name = "w", offset = 0 : i64}]} {
}
