module attributes {otc.arena_bytes = 4096 : i64, otc.buffers = [{name = "w", offset = 0 : i64, role = "param", type = memref<4611686018427387904xf32>}]} {
}
