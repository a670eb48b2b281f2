package synth

// Static vocabularies of the synthetic world. Everything here is fictional.

// Regions are the seven region names of the contract, with the share of teams
// each receives and the team strength offset of the scene.
var regions = []struct {
	name      string
	weight    float64
	offset    float64
	countries []string
	hourUTC   int // usual first broadcast hour (UTC)
}{
	{"Europe", 0.36, 60, []string{"DE", "FR", "DK", "SE", "PL", "FI", "NO", "ES", "PT", "GB", "NL", "BE", "CZ", "SK", "HU", "RO", "BG", "RS", "BA", "EE", "LV", "LT", "IT", "TR"}, 12},
	{"CIS", 0.19, 40, []string{"RU", "UA", "KZ", "BY", "UZ"}, 11},
	{"North America", 0.12, -10, []string{"US", "CA", "MX"}, 18},
	{"South America", 0.12, -20, []string{"BR", "AR", "CL", "UY", "PE", "CO"}, 17},
	{"Asia", 0.12, -90, []string{"CN", "MN", "JP", "KR", "IN", "ID", "MY", "PH", "TH", "VN", "SG", "IL", "SA", "AE", "JO"}, 5},
	{"Oceania", 0.05, -60, []string{"AU", "NZ"}, 3},
	{"Africa", 0.04, -160, []string{"ZA", "EG", "TN", "MA", "NG"}, 13},
}

var countryNames = map[string]string{
	"DE": "Germany", "FR": "France", "DK": "Denmark", "SE": "Sweden", "PL": "Poland", "FI": "Finland",
	"NO": "Norway", "ES": "Spain", "PT": "Portugal", "GB": "United Kingdom", "NL": "Netherlands",
	"BE": "Belgium", "CZ": "Czech Republic", "SK": "Slovakia", "HU": "Hungary", "RO": "Romania",
	"BG": "Bulgaria", "RS": "Serbia", "BA": "Bosnia and Herzegovina", "EE": "Estonia", "LV": "Latvia",
	"LT": "Lithuania", "IT": "Italy", "TR": "Turkey", "RU": "Russia", "UA": "Ukraine", "KZ": "Kazakhstan",
	"BY": "Belarus", "UZ": "Uzbekistan", "US": "United States", "CA": "Canada", "MX": "Mexico",
	"BR": "Brazil", "AR": "Argentina", "CL": "Chile", "UY": "Uruguay", "PE": "Peru", "CO": "Colombia",
	"CN": "China", "MN": "Mongolia", "JP": "Japan", "KR": "South Korea", "IN": "India", "ID": "Indonesia",
	"MY": "Malaysia", "PH": "Philippines", "TH": "Thailand", "VN": "Vietnam", "SG": "Singapore",
	"IL": "Israel", "SA": "Saudi Arabia", "AE": "United Arab Emirates", "JO": "Jordan", "AU": "Australia",
	"NZ": "New Zealand", "ZA": "South Africa", "EG": "Egypt", "TN": "Tunisia", "MA": "Morocco", "NG": "Nigeria",
}

var teamWordsA = []string{
	"Northwind", "Iron", "Crimson", "Silent", "Frost", "Golden", "Shadow", "Storm", "Obsidian", "Solar",
	"Lunar", "Atlas", "Nova", "Vortex", "Ember", "Granite", "Cobalt", "Phantom", "Rapid", "Wild",
	"Arctic", "Scarlet", "Midnight", "Thunder", "Echo", "Hollow", "Royal", "Savage", "Stellar", "Onyx",
	"Vanguard", "Feral", "Quantum", "Copper", "Velvet", "Titan", "Aurora", "Blazing", "Sable", "Jade",
	"Polar", "Rogue", "Zenith", "Umbra", "Kinetic", "Nomad", "Astral", "Basalt", "Cinder", "Dusk",
}

var teamWordsB = []string{
	"Vipers", "Lynx", "Wolves", "Ravens", "Falcons", "Sharks", "Foxes", "Hornets", "Owls", "Bears",
	"Jackals", "Cobras", "Hawks", "Stags", "Panthers", "Orcas", "Rhinos", "Mantis", "Griffins", "Krakens",
	"Coyotes", "Badgers", "Bison", "Condors", "Dragons", "Eagles", "Ferrets", "Geckos", "Herons", "Ibex",
	"Legion", "Syndicate", "Collective", "Dynasty", "Unit", "Outlaws", "Rangers", "Sentinels", "Pilots", "Reapers",
}

var teamSuffixes = []string{"", "", "", "", " Esports", " Gaming", " Club", " GG"}

var tournamentBrands = []string{
	"Northern Clash", "Polar Masters", "Crimson Cup", "Apex Series", "Harbor League", "Meridian",
	"Skyline Open", "Ironclad", "Redline", "Blue Summit", "Frontier", "Lighthouse", "Cascade",
	"Pinnacle", "Starfall", "Tidewater", "Highland", "Copperhead", "Bastion", "Equinox",
	"Nightfall", "Riverside", "Sunspire", "Wolfpack", "Glacier", "Vertex", "Orbit", "Citadel",
}

var tierEventWords = map[string][]string{
	"S": {"Masters", "World Final", "Championship", "Major"},
	"A": {"Invitational", "Cup", "Open", "Showdown"},
	"B": {"League", "Pro Series", "Series", "Cup"},
	"C": {"Challenger", "Cup", "Showdown", "Qualifier", "Weekly"},
}

var lanCities = map[string][]string{
	"Europe":        {"Cologne", "Katowice", "Copenhagen", "Stockholm", "Paris", "Lisbon", "Belgrade", "Malta", "Antwerp", "Hamburg"},
	"CIS":           {"Astana", "Kyiv", "Minsk", "Almaty", "Tashkent"},
	"North America": {"Dallas", "Atlanta", "Toronto", "Austin", "Chicago"},
	"South America": {"Rio de Janeiro", "Sao Paulo", "Buenos Aires", "Santiago"},
	"Asia":          {"Shanghai", "Tokyo", "Singapore", "Riyadh", "Bangkok"},
	"Oceania":       {"Sydney", "Melbourne", "Auckland"},
	"Africa":        {"Cape Town", "Johannesburg", "Cairo"},
}

var nickSyllables = []string{
	"ka", "zy", "ro", "mi", "tox", "dev", "vo", "ne", "ko", "shi", "ax", "el", "ze", "fa", "lu", "qu",
	"bi", "xo", "ry", "sa", "po", "ni", "jk", "ex", "on", "ar", "ti", "mo", "ve", "rb", "sk", "ip",
	"hy", "dr", "fl", "gr", "ul", "yo", "wa", "ez",
}

var firstNames = []string{
	"Lukas", "Mathias", "Emil", "Nikolai", "Andrei", "Oskar", "Mateus", "Lucas", "Gabriel", "Ivan",
	"Dmitri", "Jonas", "Felix", "Marek", "Tomas", "Adam", "Kevin", "Ryan", "Jake", "Ethan",
	"Rafael", "Diego", "Bruno", "Hiro", "Jun", "Wei", "Arjun", "Omar", "Yusuf", "Liam",
	"Noah", "Mikkel", "Sander", "Viktor", "Pavel", "Denis", "Artem", "Kirill", "Aleksi", "Juho",
}

var lastNames = []string{
	"Hansen", "Nielsen", "Kowalski", "Novak", "Ivanov", "Petrov", "Silva", "Santos", "Costa", "Oliveira",
	"Schmidt", "Muller", "Larsen", "Berg", "Lindqvist", "Virtanen", "Horvat", "Popescu", "Smith", "Johnson",
	"Garcia", "Rossi", "Tanaka", "Kim", "Chen", "Singh", "Haddad", "Yilmaz", "Kuznetsov", "Sokolov",
	"Dubois", "Martin", "Jensen", "Andersson", "Nowak", "Fischer", "Kovacs", "Ramos", "Walker", "Brown",
}

var roles = []string{"AWP", "IGL", "Lurker", "Rifler", "Support"}

// mapPool is the active duty pool; ctBias is the per-round CT advantage (logit).
var mapPool = []string{"de_ancient", "de_anubis", "de_dust2", "de_inferno", "de_mirage", "de_nuke", "de_train"}
var mapCTBias = []float64{0.10, -0.10, -0.05, 0.05, 0.05, 0.20, 0.15}

// book is a synthetic bookmaker: its margin and the noise of its prices
// (copies: the book a white label copies).
type book struct {
	id, name, copies string
	margin, noise    float64
}

var books = []book{
	{"bk-01", "Ravenwager", "", 0.050, 0.20},
	{"bk-02", "Bluefjord Bet", "", 0.040, 0.16},
	{"bk-03", "Kestrel Sports", "", 0.065, 0.24},
	{"bk-04", "Tundrabook", "", 0.035, 0.14},
	{"bk-05", "Ostrava Odds", "", 0.075, 0.28},
	{"bk-06", "Mirrorline", "bk-01", 0.050, 0.20},
}

var streamLangs = []string{"en", "en", "en", "ru", "pt", "es", "de", "fr", "pl", "tr", "zh", "da"}
var streamPlatforms = []string{"twitch", "twitch", "twitch", "youtube", "kick"}

type weaponInfo struct {
	name, class string
	dmgPerHit   int
	accuracy    float64 // hits per shot
}

var weapons = []weaponInfo{
	{"ak47", "Rifle", 30, 0.22}, // 0
	{"m4a1_silencer", "Rifle", 27, 0.24},
	{"m4a1", "Rifle", 26, 0.21},
	{"galilar", "Rifle", 24, 0.20},
	{"famas", "Rifle", 23, 0.20},
	{"awp", "Rifle", 95, 0.45}, // 5
	{"ssg08", "Rifle", 70, 0.40},
	{"deagle", "Pistols", 45, 0.28},
	{"glock", "Pistols", 18, 0.22},
	{"usp_silencer", "Pistols", 24, 0.26},
	{"p250", "Pistols", 25, 0.24}, // 10
	{"mp9", "SMG", 20, 0.21},
	{"mac10", "SMG", 19, 0.19},
	{"mag7", "Heavy", 45, 0.30},
	{"xm1014", "Heavy", 40, 0.30},
	{"hegrenade", "Grenade", 35, 0.60}, // 15
	{"taser", "Equipment", 100, 0.70},
	{"knife", "", 50, 0.80},
}

const (
	wAK = iota
	wM4S
	wM4
	wGalil
	wFamas
	wAWP
	wScout
	wDeagle
	wGlock
	wUSP
	wP250
	wMP9
	wMac10
	wMag7
	wXM
	wHE
	wTaser
	wKnife
	nWeapons
)

var hitGroups = []string{"Head", "Chest", "Stomach", "LeftArm", "RightArm", "LeftLeg", "RightLeg", "Gear", "Generic"}
var hitWeights = []float64{0.20, 0.36, 0.14, 0.07, 0.07, 0.07, 0.07, 0.01, 0.01}
var hitMult = []float64{4, 1, 1.25, 1, 1, 0.75, 0.75, 1, 1}
