def f(x: "f32[N]") -> "f32[N]":
	if x:
        return -x ** 2 if x else ~x
