//! The `karpsim` command line: parse arguments, call the library, print.

fn main() {
    println!("karpsim");
}
