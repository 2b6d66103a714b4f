(module
  (func $div (export "div") (param i32 i32) (result i32) (i32.div_s (local.get 0) (local.get 1)))
  (func (export "fib") (param i64) (result i64)
    (if (result i64) (i64.lt_u (local.get 0) (i64.const 2)) (then (local.get 0))
      (else (i64.add (call 1 (i64.sub (local.get 0) (i64.const 1))) (call 1 (i64.sub (local.get 0) (i64.const 2)))))))
  (func (export "mix") (param f32 f64) (result f64 f32) (local.get 1) (local.get 0))
  (func (export "spin") (loop $l (br $l))))
