module attributes {otc.arena_bytes = 96 : i64, otc.buffers = [{name = "w", offset = 64 : i64, role = "param", type = memref<16xf32>}]} {
}
