module attributes {otc.arena_bytes = 256 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "param", type = memref<16xf32>}, {name = "m", offset = 32 : i64, role = "state", type = memref<16xf32>}]} {
}
