// Given: the first example's planets.
enum Planet: String { case mercury, venus, earth, mars }

