module attributes {otc.arena_bytes = 9223372036854775807 : i64, otc.buffers = [{name = "w", offset = 9223372036854775800 : i64, role = "param", type = memref<16xf32>}]} {
}
