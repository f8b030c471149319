use dsh_system_prompt::prompt_section;

struct Habits;

impl Habits {
    #[prompt_section(order = 1)]
    fn habit(&self) -> String {
        String::new()
    }
}

fn main() {}
