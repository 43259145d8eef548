// Prints the op table of README.md from the op registry.
#include <iostream>

#include "runtime/op_registry.h"

int main() {
  std::cout << graphserve::OpTableMarkdown();
  return 0;
}
