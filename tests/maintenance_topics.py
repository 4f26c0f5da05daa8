"""Five short maintenance notes, one topic each: a tiny corpus the server-store tests share."""

TOPICS = {
    "filters.md": "The air filter should be replaced every 12 months or every 15,000 km. Dusty roads shorten it.",
    "warranty.txt": "The warranty covers manufacturing defects for three years from the date of purchase.",
    "coolant.md": "Coolant must be changed every 5 years. Use only the blue long-life coolant in the radiator.",
    "tyres.txt": "Tyre pressure should be checked monthly; 2.4 bar front and 2.6 bar rear is recommended.",
    "battery.md": "Batteries are covered for two years only. Charge the battery fully before winter storage.",
}
