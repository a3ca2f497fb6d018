def f(x: "f32[N]", *args) -> "f32[N]":
    return [x[i] for i in range(2)] + (n := 3) + 'unterminated
