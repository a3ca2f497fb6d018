// Tests of model classes in specs (parser_class.cpp, elab_classes.cpp): a class entry
// `C.m` takes the constructor's arrays then the method's, scalars with defaults held
// constant, sub-objects, __call__, helper methods and class constants inlined; located
// errors for inheritance, unknown methods, early reads, late writes and bad entries.
#include <gtest/gtest.h>

#include <string>

#include "ir/ir.h"
#include "spec/parser.h"
#include "spec/spec.h"
#include "spec_test_util.h"

namespace ollie::spec {
namespace {

using namespace spec_tests;

using ir::OpKind;

std::vector<std::string> param_names(const ir::Graph& g) {
  std::vector<std::string> names;
  for (auto& p : g.params) names.push_back(p.name);
  return names;
}

bool has_const(const ir::Graph& g, double v) {
  for (auto& n : g.nodes)
    if (n.kind == OpKind::Const && n.const_value == v) return true;
  return false;
}

// Lines 1-2: numpy and DIMS; lines 3-11: RMSNorm as people write it.
const char* kRmsNorm =
    "import numpy as np\n"
    "DIMS = dict(T=4, D=8, F=12)\n"
    "class RMSNorm:\n"
    "    def __init__(self, weight: \"f32[D]\", eps: float = 1e-6):\n"
    "        self.weight = weight\n"
    "        self.eps = eps\n"
    "\n"
    "    def forward(self, x: \"f32[T, D]\") -> \"f32[T, D]\":\n"
    "        z = (x ** 2).mean(-1, keepdims=True) + self.eps\n"
    "        return x / np.sqrt(z) * self.weight\n"
    "\n";

TEST(Classes, ParsedAsClassDefWithMethods) {
  Module m = parse_module("t.py",
                          "class A(object):\n    \"\"\"doc\"\"\"\n    K = 2\n"
                          "    def f(self, x):\n        return x\n"
                          "class B():\n    pass\n"
                          "class C: pass\n");
  ASSERT_EQ(m.body.size(), 3u);
  ASSERT_EQ(m.body[0]->kind, StmtKind::Class);
  const ClassDef& a = *m.body[0]->cls;
  EXPECT_EQ(a.name, "A");
  EXPECT_EQ(a.name_loc.col, 7);
  ASSERT_EQ(a.body.size(), 3u);
  EXPECT_EQ(a.body[2]->kind, StmtKind::Def);
  EXPECT_EQ(a.body[2]->function->params.at(0).name, "self");
  EXPECT_EQ(m.body[1]->cls->name, "B");
  EXPECT_EQ(m.body[2]->cls->body.at(0)->kind, StmtKind::Pass);
}

TEST(Classes, RmsNormIsTheDefaultEntry) {
  auto g = compile(kRmsNorm);
  EXPECT_EQ(g.entry, "RMSNorm.forward");
  EXPECT_EQ(param_names(g), (std::vector<std::string>{"weight", "x"}));
  EXPECT_EQ(ir::shape_str(g.params[0].shape), "[D]");
  EXPECT_EQ(out_type(g), "f32[T, D]");
  EXPECT_TRUE(has_const(g, 1e-6)) << "eps is held at its default";
}

TEST(Classes, EntryOptionNamesTheMethod) {
  // A second annotated method and a function: the default is ambiguous, --entry chooses.
  std::string src = std::string(kRmsNorm) +
                    "    def scaled(self, x: \"f32[T, D]\") -> \"f32[T, D]\":\n"
                    "        return self.forward(x) * 2.0\n"
                    "def g(x: \"f32[T, D]\") -> \"f32[T, D]\":\n    return x\n";
  Err e = error_of(src);
  EXPECT_HAS(e.message, "ambiguous entry: functions g, RMSNorm.forward, RMSNorm.scaled");
  SpecOptions opt;
  opt.entry = "RMSNorm.scaled";
  auto g = compile(src, opt);
  EXPECT_EQ(g.entry, "RMSNorm.scaled");
  EXPECT_TRUE(has_const(g, 2.0));
  EXPECT_EQ(count(g, OpKind::Sqrt), 1);
  opt.entry = "RMSNorm.backward";
  try {
    compile(src, opt);
    ADD_FAILURE() << "no error for an unknown method";
  } catch (const UserError& err) {
    EXPECT_HAS(err.what(), "no function 'RMSNorm.backward'");
    EXPECT_HAS(err.what(), "RMSNorm.forward, RMSNorm.scaled");
  }
}

TEST(Classes, SubObjectsCallHelperMethodsAndConstants) {
  std::string src =
      std::string(kRmsNorm) +
      "    def __call__(self, x):\n"
      "        return self.forward(x)\n"
      "N_HEADS, WIDTH = 2, 8\n"
      "def silu(x):\n    return x * (1 / (1 + np.exp(-x)))\n"
      "class FeedForward:\n"
      "    def __init__(self, up, gate, down):\n"
      "        self.up, self.gate = up, gate\n"
      "        self.down = down\n"
      "    def __call__(self, x):\n        return self.forward(x)\n"
      "    def forward(self, x):\n"
      "        return (silu(x @ self.gate) * (x @ self.up)) @ self.down\n"
      "class Block:\n"
      "    scale = 0.5\n"
      "    def __init__(self, norm: \"f32[D]\", up: \"f32[D, F]\", gate: \"f32[D, F]\",\n"
      "                 down: \"f32[F, D]\", n_heads: int = N_HEADS):\n"
      "        self.norm = RMSNorm(norm, eps=1e-5)\n"
      "        self.ffn = FeedForward(up, gate, down)\n"
      "        self.head_dim = WIDTH // n_heads\n"
      "    def residual(self, x, y):\n        return x + y\n"
      "    def forward(self, x: \"f32[T, D]\") -> \"f32[T, D]\":\n"
      "        h = self.ffn(self.norm(x))\n"
      "        return self.residual(x, h) * self.head_dim * Block.scale\n";
  SpecOptions opt;
  opt.entry = "Block.forward";
  auto g = compile(src, opt);
  EXPECT_EQ(param_names(g), (std::vector<std::string>{"norm", "up", "gate", "down", "x"}));
  EXPECT_EQ(out_type(g), "f32[T, D]");
  EXPECT_EQ(count(g, OpKind::Contract), 3);
  EXPECT_TRUE(has_const(g, 1e-5)) << "the keyword eps of the sub-object";
  EXPECT_TRUE(has_const(g, 4.0)) << "head_dim = WIDTH // n_heads";
  EXPECT_TRUE(has_const(g, 0.5));
}

TEST(Classes, ObjectsBuiltInsideAFunctionEntry) {
  auto g = compile(std::string(kRmsNorm) +
                       "def f(w: \"f32[D]\", x: \"f32[T, D]\") -> \"f32[T, D]\":\n"
                       "    return RMSNorm(w).forward(x) + RMSNorm.forward(RMSNorm(w, 0.5), x)\n",
                   SpecOptions{"f", {}});
  EXPECT_EQ(count(g, OpKind::Sqrt), 2);
  EXPECT_TRUE(has_const(g, 0.5));
}

// ---------------------------------------------------------------------------- errors

TEST(ClassErrors, Inheritance) {
  Err e = error_of("class Net(Module):\n    pass\n");
  EXPECT_EQ(e.line, 1);
  EXPECT_EQ(e.col, 11);
  EXPECT_HAS(e.message, "class inheritance is not supported");
  EXPECT_HAS(e.hint, "without a base class");
}

TEST(ClassErrors, MethodWithoutSelfAndClassInFunction) {
  Err e = error_of("class A:\n    def f():\n        return 1\n");
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.col, 9);
  EXPECT_HAS(e.message, "method 'f' of class A has no `self` parameter");
  e = error_of("def f(x):\n    class A:\n        pass\n");
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "a class inside a function is not supported");
  e = error_of("class A:\n    class B:\n        pass\n");
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "a class inside a class is not supported");
}

TEST(ClassErrors, MethodNotFound) {
  std::string src = kRmsNorm;
  src.replace(src.find("return x / np.sqrt(z) * self.weight"), 35,
              "return self.normalize(x, z) * self.weight");
  Err e = error_of(src);
  EXPECT_EQ(e.line, 10);
  EXPECT_EQ(e.col, 21);
  EXPECT_HAS(e.message, "'RMSNorm' object has no attribute 'normalize'");
  EXPECT_HAS(e.hint, "its attributes: weight, eps; its methods: forward");
}

TEST(ClassErrors, AttributeReadBeforeSet) {
  std::string src = kRmsNorm;
  src.replace(src.find("self.weight = weight"), 20, "self.weight = weight * self.eps");
  Err e = error_of(src);
  EXPECT_EQ(e.line, 5);
  EXPECT_EQ(e.col, 37);
  EXPECT_HAS(e.message, "attribute 'eps' of the 'RMSNorm' object is read before __init__ sets it");
  EXPECT_HAS(e.hint, "set self.eps = ... earlier in __init__");
}

TEST(ClassErrors, AssignToSelfOutsideInit) {
  std::string src = kRmsNorm;
  src.replace(src.find("        z = "), 8, "        self.z = 1\n        z = ");
  Err e = error_of(src);
  EXPECT_EQ(e.line, 9);
  EXPECT_EQ(e.col, 14);
  EXPECT_HAS(e.message,
             "assigning to attribute 'z' of a 'RMSNorm' object outside __init__ "
             "is not supported");
  EXPECT_HAS(e.hint, "local variable (z = ...)");
}

TEST(ClassErrors, EntryConstructorTakesAnUnannotatedArray) {
  std::string src = kRmsNorm;
  src.replace(src.find("weight: \"f32[D]\""), 16, "weight");
  Err e = error_of(src);
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 24);
  EXPECT_HAS(e.message,
             "constructor parameter 'weight' of RMSNorm has no annotation, and the "
             "entry RMSNorm.forward takes it as an array");
  EXPECT_HAS(e.hint, "weight: \"f32[D]\"");
}

TEST(ClassErrors, EntryConstructorScalarWithoutDefault) {
  std::string src = kRmsNorm;
  src.replace(src.find("eps: float = 1e-6"), 17, "eps: float");
  Err e = error_of(src);
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 42);
  EXPECT_HAS(e.message,
             "constructor parameter 'eps' of RMSNorm is a Python float without a "
             "default");
  EXPECT_HAS(e.hint, "eps: float = ...");
}

TEST(ClassErrors, ParameterNamedInBothConstructorAndMethod) {
  std::string src = kRmsNorm;
  src.replace(src.find("x: \"f32[T, D]\""), 1, "weight");
  src.replace(src.find("(x ** 2)"), 8, "(weight ** 2)");
  Err e = error_of(src);
  EXPECT_EQ(e.line, 8);
  EXPECT_EQ(e.col, 23);
  EXPECT_HAS(e.message,
             "parameter 'weight' of RMSNorm.forward has the name of a parameter of "
             "RMSNorm.__init__");
}

TEST(ClassErrors, ObjectWithoutCallAndAssignmentToOtherAttributes) {
  Err e = error_of(std::string(kRmsNorm) +
                       "def f(w: \"f32[D]\", x: \"f32[T, D]\") -> \"f32[T, D]\":\n"
                       "    norm = RMSNorm(w)\n"
                       "    return norm(x)\n",
                   SpecOptions{"f", {}});
  EXPECT_EQ(e.line, 14);
  EXPECT_EQ(e.col, 12);
  EXPECT_HAS(e.message, "a 'RMSNorm' object is not callable: class RMSNorm has no __call__");
  EXPECT_HAS(e.hint, "def __call__(self, x): return self.forward(x)");
  e = error_of(std::string("import numpy as np\n") +
               "def f(x: \"f32[3]\") -> \"f32[3]\":\n    np.y = x\n    return x\n");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.col, 8);
  EXPECT_HAS(e.message, "attribute assignment is not supported in a spec");
}

TEST(ClassErrors, ConstructorMisuseAndClassBody) {
  const std::string head = "import numpy as np\nDIMS = dict(M=3)\n";
  const std::string entry = "def f(x: \"f32[M]\") -> \"f32[M]\":\n";
  Err e = error_of(head + "class A:\n    k = 2\n" + entry + "    return x * A(x).k\n");
  EXPECT_EQ(e.line, 6);
  EXPECT_EQ(e.col, 16);
  EXPECT_HAS(e.message, "A() takes no arguments");
  EXPECT_HAS(e.hint, "define __init__(self, ...)");
  e = error_of(head + "class B:\n    def __init__(self):\n        return 1\n" + entry +
               "    return x * B()\n");
  EXPECT_EQ(e.line, 7);
  EXPECT_EQ(e.col, 16);
  EXPECT_HAS(e.message, "__init__ of class B returns an int");
  e = error_of(head + "class C:\n    import math\n");
  EXPECT_EQ(e.line, 4);
  EXPECT_EQ(e.col, 5);
  EXPECT_HAS(e.message, "a class body may hold only methods, docstrings and constants");
}

}  // namespace
}  // namespace ollie::spec
