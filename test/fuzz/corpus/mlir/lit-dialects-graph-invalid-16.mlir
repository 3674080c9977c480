func.func @unknown_hyperparameter() {
  %0 = graph.hyperparameter "learning_rate" : tensor<f32>
  return
}
