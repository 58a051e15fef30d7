fn main() {
    println!("cerberus {}", env!("CARGO_PKG_VERSION"));
}
