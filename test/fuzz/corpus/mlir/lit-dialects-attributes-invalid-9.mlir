module attributes {dist.world_size = "two"} {
}
