func.func @train_step(%w: memref<16xf32> {otc.param = "w"}, %x: memref<16xf32> {otc.input = "x", otc.role = "data"})
    -> (memref<16xf32> {otc.updates = 0 : i64}, memref<f32> {otc.output = "loss"}) {
  %a = exec.alloc : memref<64xf32>
  %b = exec.alloc : memref<64xf32>
  %c = exec.alloc : memref<64xf32>
  exec.kernel "add" ins(%a, %b : memref<64xf32>, memref<64xf32>) outs(%c : memref<64xf32>)
  %d = exec.alloc : memref<64xf32>
  exec.kernel "relu" ins(%c : memref<64xf32>) outs(%d : memref<64xf32>)
  %g = exec.alloc : memref<16xf32>
  %loss = exec.alloc : memref<f32>
  exec.kernel "sgd_update" ins(%g : memref<16xf32>) outs(%w : memref<16xf32>) 
  return %w, %loss : memref<16xf32>, memref<f32>
}

func.func @eval_step(%w: memref<16xf32> {otc.param = "w"}, %x: memref<16xf32> {otc.input = "x", otc.role = "data"})
    -> (memref<16xf32> {otc.output = "eval_output"}) {
  %y = exec.alloc : memref<16xf32>
  exec.kernel "add" ins(%w, %x : memref<16xf32>, memref<16xf32>) outs(%y : memref<16xf32>)
  return %y : memref<16xf32>
}
