// all_to_all_with_output_shape.cc — comm_func.all_to_all_with_output_shape's docstring
// example: input i goes to rank i; output i (of the given shape) comes from rank i.
//   rank 0 sends [1., [[2, 3], [4, 5]]] and expects shapes [(), (2,)]
//   rank 1 sends [[2, 2], [4, 5, 6, 7]] and expects shapes [(2, 2), (4,)]
//
// Run:  collie run -n 2 build/examples/all_to_all_with_output_shape
// Prints:
//   rank 0:
//   (1.0,
//    [2. 2.])
//   rank 1:
//   ([[2. 3.]
//    [4. 5.]],
//    [4. 5. 6. 7.])
#include "example_util.h"

int main() {
  return examples::run_example([](int this_rank, int) {
    std::vector<collie::Tensor> send_tensor_list;
    std::vector<collie::Shape> recv_tensor_list;
    if (this_rank == 0) {
      send_tensor_list = {collie::Tensor::scalar(1.0),
                          collie::Tensor::from_vector<float>({2, 3, 4, 5}, {2, 2})};
      recv_tensor_list = {collie::Shape{}, collie::Shape{2}};
    } else {
      send_tensor_list = {collie::Tensor::from_vector<float>({2, 2}),
                          collie::Tensor::from_vector<float>({4, 5, 6, 7})};
      recv_tensor_list = {collie::Shape{2, 2}, collie::Shape{4}};
    }
    auto [output, handle] = collie::all_to_all_with_output_shape(recv_tensor_list, send_tensor_list);
    examples::print_in_rank_order("rank " + std::to_string(this_rank) + ":\n" +
                                  examples::tuple_str(output, ",\n ") + "\n");
  });
}
