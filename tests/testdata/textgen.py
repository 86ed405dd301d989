"""Our own synthetic text: word lists, templates and seeded generators.

Everything here was written for this project; no third-party data set is copied. The
generators are pure functions of a ``random.Random`` so that ``make_testdata.py`` can
rebuild the training corpus, the demo JSONL files and every tokenizer byte for byte.

The text deliberately avoids ``{``, ``}`` and ``|`` and contains no CJK characters or
emoji: tokenizers trained on it map those characters to their unknown token, which the
pipeline's UNK reporting and template-literal checks need. The only exception is one
demo record (``EMOJI_CJK_RECORD``) that exists to exercise the UNK index.
"""

from __future__ import annotations

import random

# --------------------------------------------------------------------------- English

# Each topic: a question for "explain" tasks, a one-sentence summary and facts that
# read as a paragraph when taken in order.
EN_TOPICS: dict[str, dict] = {
    "bees": {
        "question": "why bees matter for farming",
        "summary": "Bees pollinate crops and live in large, organized colonies.",
        "facts": [
            "Honey bees live in colonies that can hold tens of thousands of workers.",
            "A worker bee visits hundreds of flowers on a single trip.",
            "While collecting nectar, bees carry pollen from one flower to the next.",
            "Many fruits and vegetables depend on this pollination to grow.",
            "The queen is the only bee in the hive that lays eggs.",
            "Bees share the location of good flowers with a short dance.",
            "In winter the colony gathers in a tight ball to keep warm.",
        ],
    },
    "tides": {
        "question": "how ocean tides work",
        "summary": "Tides rise and fall because the Moon and the Sun pull on the oceans.",
        "facts": [
            "The gravity of the Moon pulls the water of the oceans toward it.",
            "Most coasts see two high tides and two low tides every day.",
            "The Sun also pulls on the water, but its effect is smaller.",
            "When the Sun and the Moon line up, the tides are especially strong.",
            "These strong tides are called spring tides, although they happen all year.",
            "Harbors publish tide tables so that boats can plan their trips.",
        ],
    },
    "bread": {
        "question": "why bread dough rises",
        "summary": "Bread rises because yeast makes gas that the dough traps.",
        "facts": [
            "Bread is made from flour, water, salt and yeast.",
            "Kneading the dough builds a stretchy network of gluten.",
            "Yeast feeds on sugar and releases small bubbles of carbon dioxide.",
            "The gluten network traps the gas, so the dough slowly rises.",
            "Heat in the oven sets the crumb and browns the crust.",
            "A loaf should cool for an hour before it is sliced.",
        ],
    },
    "rainbows": {
        "question": "how a rainbow forms",
        "summary": "A rainbow appears when raindrops bend and reflect sunlight.",
        "facts": [
            "A rainbow needs sunlight behind you and rain in front of you.",
            "Each raindrop bends the light as it enters and leaves.",
            "White light splits into colors because each color bends by a different amount.",
            "Red always appears on the outer edge of the main bow.",
            "Sometimes a fainter second bow shows its colors in reverse order.",
            "From an airplane, a rainbow can look like a complete circle.",
        ],
    },
    "compost": {
        "question": "how compost is made",
        "summary": "Compost turns kitchen and garden waste into rich soil.",
        "facts": [
            "Compost is made from fruit peels, leaves, grass and other plant waste.",
            "Tiny organisms break the waste down into dark, crumbly soil.",
            "A good pile mixes green material with dry brown material.",
            "Turning the pile every week lets air reach the center.",
            "Finished compost helps gardens hold water and feeds the plants.",
            "Meat and oily food should stay out of a home compost bin.",
        ],
    },
    "bicycles": {
        "question": "why bicycles are useful in cities",
        "summary": "Bicycles are cheap, quiet and efficient machines for getting around.",
        "facts": [
            "A bicycle turns the push of your legs into forward motion.",
            "Gears let the rider climb hills without pushing too hard.",
            "Riding to work saves money and keeps the rider fit.",
            "Bicycles make no noise and produce no exhaust.",
            "Checking the brakes and the tire pressure takes only a minute.",
            "A bright light and a helmet make evening rides much safer.",
        ],
    },
    "sleep": {
        "question": "why sleep is important",
        "summary": "Good sleep helps the body recover and the mind stay sharp.",
        "facts": [
            "Adults usually need between seven and nine hours of sleep.",
            "During deep sleep the body repairs muscles and tissues.",
            "Sleep also helps the brain store what we learned during the day.",
            "Screens late at night can make it harder to fall asleep.",
            "Going to bed at the same time each night builds a steady rhythm.",
            "A cool, dark and quiet room is best for rest.",
        ],
    },
    "volcanoes": {
        "question": "how volcanoes form",
        "summary": "Volcanoes form where melted rock from deep underground reaches the surface.",
        "facts": [
            "Deep under the ground, rock can become hot enough to melt.",
            "The melted rock, called magma, rises because it is lighter than the rock around it.",
            "When magma reaches the surface it is called lava.",
            "Some volcanoes erupt gently while others explode with great force.",
            "Ash from a large eruption can travel thousands of kilometers.",
            "Over time, volcanic soil becomes very fertile.",
        ],
    },
    "libraries": {
        "question": "what a public library offers",
        "summary": "Public libraries lend books and offer free places to learn.",
        "facts": [
            "A public library lends books to anyone with a library card.",
            "Many libraries also lend music, films and even tools.",
            "Librarians help visitors find reliable information.",
            "Quiet reading rooms give students a place to study.",
            "Children's programs encourage young readers to explore stories.",
            "Most services at a public library are free of charge.",
        ],
    },
    "recycling": {
        "question": "why recycling is useful",
        "summary": "Recycling saves materials and energy by turning used items into new products.",
        "facts": [
            "Glass, paper, metal and some plastics can be recycled.",
            "Recycled aluminum needs far less energy than new aluminum.",
            "Items should be rinsed before they go into the recycling bin.",
            "Sorting waste at home makes the work of recycling plants easier.",
            "Paper fibers can be recycled several times before they become too short.",
            "Buying fewer disposable items is even better than recycling them.",
        ],
    },
    "exercise": {
        "question": "how exercise helps the body",
        "summary": "Regular exercise strengthens the heart, the muscles and the mood.",
        "facts": [
            "Thirty minutes of brisk walking on most days is a good start.",
            "Exercise makes the heart stronger and lowers blood pressure.",
            "Lifting weights helps keep muscles and bones strong.",
            "Physical activity releases chemicals that improve mood.",
            "Stretching after exercise can reduce stiffness.",
            "Drinking water before and after a workout prevents dehydration.",
        ],
    },
    "spreadsheets": {
        "question": "what a spreadsheet is used for",
        "summary": "Spreadsheets organize numbers in tables and calculate results automatically.",
        "facts": [
            "A spreadsheet arranges data in rows and columns of cells.",
            "Each cell can hold a number, a piece of text or a formula.",
            "Formulas update automatically when the numbers they use change.",
            "Charts turn long columns of numbers into pictures that are easy to read.",
            "Sorting and filtering help people find patterns in large tables.",
            "Small businesses often track their budgets in a spreadsheet.",
        ],
    },
}

# verb -> (past, past participle, objects); objects in PLURAL_OBJECTS take "were".
EN_VERBS: dict[str, tuple[str, str, list[str]]] = {
    "clean": ("cleaned", "cleaned", ["the kitchen window", "the wooden table", "the garage"]),
    "paint": ("painted", "painted", ["the old fence", "the red door", "the garden gate"]),
    "repair": ("repaired", "repaired", ["the broken clock", "the blue bicycle", "the roof"]),
    "write": ("wrote", "written", ["a long letter", "the report", "a short poem"]),
    "build": ("built", "built", ["a small boat", "the bookshelf", "a tree house"]),
    "bake": ("baked", "baked", ["a birthday cake", "the bread", "fresh cookies"]),
    "sell": ("sold", "sold", ["the old car", "the blue bicycle", "fresh vegetables"]),
    "draw": ("drew", "drawn", ["a map of the town", "a portrait", "the plans"]),
    "wash": ("washed", "washed", ["the dishes", "the car", "the windows"]),
}
PLURAL_OBJECTS = {"fresh cookies", "fresh vegetables", "the plans", "the dishes", "the windows"}
EN_AGENTS = [
    "the chef", "the teacher", "the gardener", "the engineer", "our neighbor",
    "the pilot", "the student", "the farmer", "the artist", "the mechanic",
]
EN_TIMES = ["yesterday", "last week", "on Monday", "this morning", "after lunch", ""]

EN_CATEGORIES: dict[str, list[str]] = {
    "fruits": ["apples", "bananas", "mangoes", "pears", "cherries", "oranges", "grapes", "papayas", "plums", "lemons"],
    "vegetables": ["carrots", "spinach", "onions", "potatoes", "peppers", "cabbage", "beans", "pumpkins", "radishes"],
    "colors": ["red", "orange", "yellow", "green", "blue", "purple", "brown", "gray", "white"],
    "musical instruments": ["the piano", "the violin", "the flute", "the drums", "the guitar", "the cello", "the trumpet"],
    "planets": ["Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn", "Uranus", "Neptune"],
    "programming languages": ["Python", "Java", "Rust", "Go", "JavaScript", "C", "Ruby", "Haskell"],
    "sports": ["football", "tennis", "swimming", "basketball", "cycling", "volleyball", "badminton"],
    "birds": ["sparrows", "eagles", "owls", "parrots", "pigeons", "herons", "swallows"],
    "tools": ["a hammer", "a saw", "a screwdriver", "a wrench", "a drill", "a tape measure"],
}
EN_NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}

EN_REVIEWS = {
    "positive": [
        "The food was delicious and the staff were friendly.",
        "I loved the soft fabric and the bright color.",
        "Delivery was fast and the package arrived in perfect condition.",
        "The battery lasts all day and charges quickly.",
        "This is the most comfortable chair I have ever owned.",
        "The instructions were clear and setup took five minutes.",
        "Great value for the price, I would buy it again.",
        "The hotel room was clean, quiet and close to the beach.",
    ],
    "negative": [
        "The soup was cold and the waiter ignored us.",
        "The zipper broke after two days.",
        "My order arrived a week late and the box was damaged.",
        "The battery dies before lunch.",
        "The chair wobbles and the cushion is already flat.",
        "The manual was confusing and a screw was missing.",
        "It is far too expensive for what you get.",
        "The room smelled of smoke and the walls were thin.",
    ],
}

EN_CAPITALS = [
    ("France", "Paris"), ("Japan", "Tokyo"), ("Kenya", "Nairobi"), ("Canada", "Ottawa"),
    ("Brazil", "Brasília"), ("Vietnam", "Hanoi"), ("Australia", "Canberra"), ("Egypt", "Cairo"),
    ("Peru", "Lima"), ("Norway", "Oslo"), ("Mexico", "Mexico City"), ("India", "New Delhi"),
    ("Germany", "Berlin"), ("Argentina", "Buenos Aires"), ("Thailand", "Bangkok"),
]

EN_ANTONYMS = [
    ("hot", "cold"), ("early", "late"), ("full", "empty"), ("bright", "dark"), ("heavy", "light"),
    ("fast", "slow"), ("open", "closed"), ("happy", "sad"), ("strong", "weak"), ("rich", "poor"),
    ("ancient", "modern"), ("generous", "selfish"), ("noisy", "quiet"), ("wide", "narrow"),
]

EN_WORDS_TO_REVERSE = [
    "garden", "window", "planet", "pencil", "rainbow", "kitchen", "bottle", "market",
    "silver", "forest", "lantern", "harbor", "blanket", "thunder", "pepper", "ticket",
]

EN_YES_NO = [
    ("Is the Sun a star?", "Yes."),
    ("Can penguins fly?", "No, penguins cannot fly, but they are excellent swimmers."),
    ("Is water made of hydrogen and oxygen?", "Yes."),
    ("Do spiders have six legs?", "No, spiders have eight legs."),
    ("Is Mount Everest the tallest mountain above sea level?", "Yes."),
    ("Does sound travel faster than light?", "No, light travels much faster than sound."),
    ("Is a tomato a fruit?", "Yes, botanically a tomato is a fruit."),
    ("Do plants need sunlight to make food?", "Yes."),
]

EN_NAMES = ["Alice", "Minh", "Carlos", "Priya", "Tom", "Lan", "Sofia", "David", "Hana", "Omar"]
EN_EVENTS: dict[str, list[str]] = {
    "the team picnic on Saturday": [
        "The picnic starts at noon in Riverside Park.",
        "Please bring a dish to share and something to sit on.",
        "We will play games after lunch, so wear comfortable shoes.",
        "If it rains, we will meet in the community hall instead.",
        "Let me know by Thursday if you can come.",
    ],
    "the new office hours": [
        "From next Monday, the office will open at eight and close at five.",
        "The front desk will be closed during lunch, from twelve to one.",
        "Urgent requests can still be sent by email at any time.",
        "Thank you for your patience while we adjust.",
        "Please share this with anyone who visits us often.",
    ],
    "a delayed delivery": [
        "I am sorry to tell you that your order will arrive three days late.",
        "The delay was caused by a problem at our warehouse.",
        "We have added a small discount to your account.",
        "You can track the package with the link in your receipt.",
        "Please contact us if the new date does not suit you.",
    ],
    "the book club meeting": [
        "This month we are reading a novel about a lighthouse keeper.",
        "The meeting will take place in the library on Wednesday evening.",
        "Tea and biscuits will be provided.",
        "Please finish at least the first half of the book.",
        "New members are always welcome.",
    ],
    "the science fair next month": [
        "The science fair will be held in the school gym.",
        "Each team should prepare a poster and a short demonstration.",
        "Projects must be registered by the end of this week.",
        "Judges will look for clear questions and careful measurements.",
        "Parents and friends are invited to visit in the afternoon.",
    ],
}

STORY_ANIMALS = ["fox", "turtle", "rabbit", "owl", "goat", "sparrow", "otter", "hedgehog"]
STORY_ADJECTIVES = ["curious", "shy", "clever", "tiny", "brave", "sleepy", "cheerful", "stubborn"]
STORY_GOALS = [
    "cross the great river", "find the oldest tree in the forest", "learn to sing",
    "build a warm home before winter", "visit the city by the sea", "make a new friend",
]
STORY_PLACES = [
    "a quiet pond", "the edge of a pine forest", "a busy farm", "the foot of a green hill",
    "an old stone bridge",
]
STORY_HABITS = [
    "watched the clouds drift by", "collected shiny pebbles", "counted the boats on the water",
    "listened to the wind in the grass",
]
STORY_MIDDLES = [
    "The journey was harder than expected.",
    "Rain fell for three days, and the path turned to mud.",
    "At first, the other animals laughed at the idea.",
    "Some nights the {animal} wanted to give up.",
    "The map it had drawn turned out to be wrong.",
]
STORY_HELPERS = ["An old heron", "A friendly beaver", "A wise tortoise", "A group of noisy ducks"]
STORY_LESSONS = [
    "patience is a kind of courage", "friends make every road shorter",
    "small steps still move you forward", "asking for help is nothing to be ashamed of",
]

# ------------------------------------------------------------------------ Vietnamese

VI_CITIES: dict[str, tuple[list[str], str]] = {
    "Hà Nội": (["Hồ Gươm", "Văn Miếu", "khu phố cổ"], "Bạn nên thử cà phê trứng ở một quán nhỏ gần hồ."),
    "Huế": (["Đại Nội", "chùa Thiên Mụ", "sông Hương"], "Buổi tối, bạn có thể nghe ca Huế trên thuyền rồng."),
    "Đà Nẵng": (["cầu Rồng", "bãi biển Mỹ Khê", "bán đảo Sơn Trà"], "Cuối tuần, cầu Rồng phun lửa và phun nước vào buổi tối."),
    "Hội An": (["phố cổ Hội An", "chùa Cầu", "làng gốm Thanh Hà"], "Đêm rằm, phố cổ tắt đèn điện và thắp đèn lồng rất đẹp."),
    "Đà Lạt": (["hồ Xuân Hương", "thung lũng Tình Yêu", "chợ Đà Lạt"], "Trời Đà Lạt về đêm khá lạnh, bạn nhớ mang áo ấm."),
    "Thành phố Hồ Chí Minh": (["chợ Bến Thành", "Nhà thờ Đức Bà", "phố đi bộ Nguyễn Huệ"], "Bạn nên đi lại bằng xe buýt hoặc taxi vào giờ cao điểm."),
    "Nha Trang": (["Tháp Bà Ponagar", "bãi biển Trần Phú", "Hòn Chồng"], "Hải sản ở đây tươi ngon và giá khá phải chăng."),
    "Cần Thơ": (["chợ nổi Cái Răng", "bến Ninh Kiều", "vườn trái cây Mỹ Khánh"], "Bạn nên dậy thật sớm để đi chợ nổi lúc bình minh."),
}
VI_WEATHER = [
    ("nắng đẹp", (28, 35), "Bạn nhớ mang theo nón và uống đủ nước nhé."),
    ("có mưa rào vào buổi chiều", (24, 29), "Bạn nên mang theo áo mưa hoặc ô khi ra ngoài."),
    ("nhiều mây và hơi se lạnh", (16, 22), "Bạn nên mặc thêm một chiếc áo khoác mỏng."),
    ("oi bức và độ ẩm cao", (31, 37), "Bạn nên mặc quần áo thoáng mát và tránh ra đường vào buổi trưa."),
    ("có gió mạnh", (22, 27), "Bạn hãy cẩn thận khi đi xe máy qua cầu."),
    ("mát mẻ, dễ chịu", (20, 25), "Đây là thời điểm rất hợp để đi dạo hoặc chạy bộ."),
]
VI_DISHES = {
    "phở bò": "Đây là món nước với bánh phở mềm, thịt bò thái mỏng và nước dùng thơm mùi quế, hồi.",
    "bún chả": "Món này gồm bún, chả thịt heo nướng trên than hoa và nước mắm chua ngọt.",
    "bánh mì": "Ổ bánh mì giòn được kẹp với pa-tê, thịt nguội, rau thơm và đồ chua.",
    "cơm tấm": "Cơm tấm thường ăn với sườn nướng, bì, chả trứng và mỡ hành.",
    "bún bò Huế": "Nước dùng có vị cay nhẹ và thơm mùi sả, ăn kèm giò heo và chả cua.",
    "gỏi cuốn": "Bánh tráng cuốn tôm, thịt, bún và rau sống, chấm với nước tương đậu phộng.",
    "bánh xèo": "Bánh có vỏ vàng giòn, nhân tôm, thịt và giá, ăn kèm rau sống.",
    "mì Quảng": "Sợi mì vàng, ít nước dùng, có tôm, thịt, trứng cút và bánh tráng nướng.",
    "cháo gà": "Cháo nóng nấu với gà xé, hành lá và tiêu, rất dễ ăn khi trời lạnh.",
    "canh chua cá": "Canh có vị chua của me, vị ngọt của thơm và cà chua, nấu cùng cá và rau thơm.",
}
VI_MEALS = ["sáng", "trưa", "tối"]
VI_SKILLS = ["tiếng Anh", "lập trình Python", "nấu ăn", "chơi đàn ghi-ta", "vẽ tranh", "bơi", "chụp ảnh", "toán"]
VI_ADVICE = [
    "đặt mục tiêu rõ ràng cho từng tuần", "luyện tập đều đặn mỗi ngày",
    "ghi chép lại những điều đã học", "tìm một người bạn cùng học",
    "chia nhỏ bài học thành từng phần", "xem lại những lỗi sai của mình",
    "nghỉ ngơi đầy đủ", "tham gia một câu lạc bộ hoặc nhóm học",
]
VI_CLOSINGS = [
    "Quan trọng nhất là kiên trì, đừng bỏ cuộc khi gặp khó khăn.",
    "Chúc bạn học tốt!",
    "Sau vài tháng, bạn sẽ thấy mình tiến bộ rõ rệt.",
]
VI_TOPICS = {
    "trí tuệ nhân tạo": (
        "Trí tuệ nhân tạo là lĩnh vực nghiên cứu cách giúp máy tính học hỏi, suy luận và giải quyết vấn đề giống con người.",
        "Ngày nay, trí tuệ nhân tạo được dùng trong dịch máy, nhận dạng giọng nói và xe tự lái.",
    ),
    "biến đổi khí hậu": (
        "Biến đổi khí hậu là sự thay đổi lâu dài của nhiệt độ và thời tiết trên Trái Đất.",
        "Nguyên nhân chính là con người đốt than, dầu và khí đốt, làm tăng lượng khí nhà kính.",
    ),
    "năng lượng mặt trời": (
        "Năng lượng mặt trời là nguồn năng lượng lấy từ ánh sáng và nhiệt của Mặt Trời.",
        "Các tấm pin mặt trời biến ánh sáng thành điện để dùng trong gia đình và nhà máy.",
    ),
    "quang hợp": (
        "Quang hợp là quá trình cây xanh dùng ánh sáng mặt trời để biến nước và khí các-bô-níc thành chất dinh dưỡng.",
        "Trong quá trình này, cây thải ra khí ô-xy giúp con người và động vật hô hấp.",
    ),
    "máy học": (
        "Máy học là một nhánh của trí tuệ nhân tạo, trong đó máy tính tự rút ra quy luật từ dữ liệu.",
        "Ví dụ, hộp thư điện tử dùng máy học để lọc thư rác.",
    ),
    "internet": (
        "Internet là mạng lưới toàn cầu kết nối hàng tỉ máy tính và điện thoại với nhau.",
        "Nhờ có internet, chúng ta có thể gửi thư, xem tin tức và học trực tuyến.",
    ),
    "lạm phát": (
        "Lạm phát là hiện tượng giá cả hàng hóa và dịch vụ tăng lên theo thời gian.",
        "Khi lạm phát cao, cùng một số tiền sẽ mua được ít hàng hóa hơn.",
    ),
    "hệ Mặt Trời": (
        "Hệ Mặt Trời gồm Mặt Trời và tám hành tinh quay quanh nó, trong đó có Trái Đất.",
        "Sao Mộc là hành tinh lớn nhất, còn sao Thủy là hành tinh nằm gần Mặt Trời nhất.",
    ),
}
VI_EN_PAIRS = [
    ("Tôi thích đọc sách vào buổi tối.", "I like reading books in the evening."),
    ("Hôm nay trời rất đẹp.", "The weather is very nice today."),
    ("Bạn có khỏe không?", "How are you?"),
    ("Chúng tôi sẽ đi du lịch vào tháng sau.", "We will go on a trip next month."),
    ("Cảm ơn bạn rất nhiều.", "Thank you very much."),
    ("Thư viện mở cửa lúc tám giờ sáng.", "The library opens at eight in the morning."),
    ("Em trai tôi đang học lập trình.", "My younger brother is learning to program."),
    ("Quán cà phê này rất yên tĩnh.", "This coffee shop is very quiet."),
]
VI_SMALL_TALK = [
    ("Xin chào, bạn là ai?",
     "Xin chào! Tôi là một trợ lý ảo. Tôi có thể trả lời câu hỏi, gợi ý món ăn hoặc giúp bạn lên kế hoạch cho chuyến đi."),
    ("Cảm ơn bạn nhé!", "Không có gì! Nếu cần thêm thông tin, bạn cứ hỏi tôi."),
    ("Tôi cảm thấy hơi mệt, tôi nên làm gì?",
     "Bạn nên nghỉ ngơi một chút, uống một cốc nước ấm và ngủ sớm hơn tối nay. Nếu mệt kéo dài, bạn hãy đi khám bác sĩ."),
    ("Chúc bạn một ngày tốt lành!", "Cảm ơn bạn! Chúc bạn một ngày thật vui và nhiều năng lượng."),
    ("Bạn có thể kể một câu chuyện cười ngắn không?",
     "Một cậu bé hỏi bố: \"Bố ơi, tại sao nước biển lại mặn?\" Người bố đáp: \"Vì cá khóc nhiều quá con ạ.\""),
]

# The single demo record whose output the demo tokenizer cannot cover (CJK + emoji).
EMOJI_CJK_RECORD = {
    "instruction": "Tell me how Chinese characters are written in Chinese, and end with a smiley.",
    "input": "",
    "output": "They are written 漢字 (hanzi). Have fun practicing! 🙂",
}


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# ----------------------------------------------------------- English instruction tasks
# Each task returns (instruction, input, output).

def task_summarize(rng: random.Random) -> tuple[str, str, str]:
    topic = EN_TOPICS[rng.choice(sorted(EN_TOPICS))]
    k = rng.randint(3, len(topic["facts"]))
    start = rng.randint(0, len(topic["facts"]) - k)
    instruction = rng.choice([
        "Summarize the following paragraph in one sentence.",
        "Give a one-sentence summary of the text below.",
        "Read the passage and state its main idea.",
        "Write a short summary of this text.",
    ])
    return instruction, " ".join(topic["facts"][start:start + k]), topic["summary"]


def task_explain(rng: random.Random) -> tuple[str, str, str]:
    topic = EN_TOPICS[rng.choice(sorted(EN_TOPICS))]
    form = rng.choice(["Explain {q}.", "In a few sentences, explain {q}.", "Briefly explain {q}."])
    facts = rng.sample(topic["facts"], rng.randint(1, 4))
    return form.format(q=topic["question"]), "", " ".join([topic["summary"], *facts])


def task_passive(rng: random.Random) -> tuple[str, str, str]:
    verb = rng.choice(sorted(EN_VERBS))
    past, participle, objects = EN_VERBS[verb]
    obj, agent, when = rng.choice(objects), rng.choice(EN_AGENTS), rng.choice(EN_TIMES)
    tail = f" {when}." if when else "."
    be = "were" if obj in PLURAL_OBJECTS else "was"
    instruction = rng.choice([
        "Rewrite the sentence in the passive voice.",
        "Change this sentence from active to passive voice.",
    ])
    return instruction, f"{_cap(agent)} {past} {obj}{tail}", f"{_cap(obj)} {be} {participle} by {agent}{tail}"


def task_arithmetic(rng: random.Random) -> tuple[str, str, str]:
    a, b = rng.randint(2, 99), rng.randint(2, 99)
    kind = rng.choice(["plus", "times", "add", "subtract"])
    if kind == "plus":
        return f"What is {a} plus {b}?", "", f"{a} plus {b} is {a + b}."
    if kind == "times":
        return f"Multiply {a} by {b}.", "", f"{a} multiplied by {b} equals {a * b}."
    if kind == "add":
        return "Add the two numbers.", f"{a} and {b}", str(a + b)
    big, small = max(a, b), min(a, b)
    return "Subtract the second number from the first.", f"{big}, {small}", str(big - small)


def task_list(rng: random.Random) -> tuple[str, str, str]:
    category = rng.choice(sorted(EN_CATEGORIES))
    n = rng.randint(2, 5)
    items = rng.sample(EN_CATEGORIES[category], n)
    instruction = rng.choice(["List {n} {c}.", "Name {n} {c}.", "Give me {n} examples of {c}."])
    if rng.random() < 0.5:
        output = "\n".join(f"{i}. {_cap(item)}" for i, item in enumerate(items, 1))
    else:
        output = _cap(", ".join(items[:-1]) + " and " + items[-1] + ".")
    return instruction.format(n=EN_NUMBER_WORDS[n], c=category), "", output


def task_sentiment(rng: random.Random) -> tuple[str, str, str]:
    polarity = rng.choice(["positive", "negative"])
    review = " ".join(rng.sample(EN_REVIEWS[polarity], rng.randint(1, 3)))
    output = rng.choice([_cap(polarity), f"The sentiment is {polarity}.", f"{_cap(polarity)}."])
    return "Classify the sentiment of the review as positive or negative.", review, output


def task_capital(rng: random.Random) -> tuple[str, str, str]:
    country, capital = rng.choice(EN_CAPITALS)
    if rng.random() < 0.5:
        return f"What is the capital of {country}?", "", f"The capital of {country} is {capital}."
    return "Name the capital city of the given country.", country, capital


def task_antonym(rng: random.Random) -> tuple[str, str, str]:
    word, opposite = rng.choice(EN_ANTONYMS)
    if rng.random() < 0.5:
        word, opposite = opposite, word
    if rng.random() < 0.5:
        return "Give the opposite of the word.", word, opposite
    return f'What is the opposite of "{word}"?', "", f'The opposite of "{word}" is "{opposite}".'


def task_sort(rng: random.Random) -> tuple[str, str, str]:
    numbers = rng.sample(range(1, 100), rng.randint(3, 8))
    descending = rng.random() < 0.3
    instruction = ("Arrange the numbers in descending order." if descending
                   else "Sort these numbers from smallest to largest.")
    output = sorted(numbers, reverse=descending)
    return instruction, ", ".join(map(str, numbers)), ", ".join(map(str, output))


def task_uppercase(rng: random.Random) -> tuple[str, str, str]:
    topic = EN_TOPICS[rng.choice(sorted(EN_TOPICS))]
    sentence = rng.choice(topic["facts"])
    return "Convert the following sentence to uppercase.", sentence, sentence.upper()


def task_reverse(rng: random.Random) -> tuple[str, str, str]:
    word = rng.choice(EN_WORDS_TO_REVERSE)
    return "Write the given word backwards.", word, word[::-1]


def task_yes_no(rng: random.Random) -> tuple[str, str, str]:
    question, answer = rng.choice(EN_YES_NO)
    return question, "", answer


EN_SHORT = [
    ("Say hello.", "Hello!"), ("Count to three.", "One, two, three."),
    ("Name a primary color.", "Blue."), ("Name a season.", "Autumn."),
    ("Give a synonym for big.", "Large."), ("Name a planet.", "Mars."),
    ("Say thank you.", "Thank you!"), ("Name a vowel.", "E."),
]


def task_short(rng: random.Random) -> tuple[str, str, str]:
    instruction, output = rng.choice(EN_SHORT)
    return instruction, "", output


def task_note(rng: random.Random) -> tuple[str, str, str]:
    to, sender = rng.sample(EN_NAMES, 2)
    event = rng.choice(sorted(EN_EVENTS))
    body = " ".join(rng.sample(EN_EVENTS[event], rng.randint(2, 5)))
    return (f"Write a short note to {to} about {event}.", "",
            f"Dear {to},\n\n{body}\n\nBest wishes,\n{sender}")


def task_story(rng: random.Random) -> tuple[str, str, str]:
    animal, adj = rng.choice(STORY_ANIMALS), rng.choice(STORY_ADJECTIVES)
    goal = rng.choice(STORY_GOALS)
    middles = [m.format(animal=animal) for m in rng.sample(STORY_MIDDLES, rng.randint(1, 3))]
    parts = [
        f"Once upon a time, a {adj} {animal} lived near {rng.choice(STORY_PLACES)}.",
        f"Every morning it {rng.choice(STORY_HABITS)}.",
        f"One day, the {animal} decided to {goal}.",
        *middles,
        f"{rng.choice(STORY_HELPERS)} offered to help.",
        "Together they made a plan and tried again and again.",
        f"After many days, the {animal} finally managed to {goal}.",
        f"In the end, it learned that {rng.choice(STORY_LESSONS)}.",
    ]
    return f"Write a short story about a {adj} {animal} who wants to {goal}.", "", " ".join(parts)


# (task, weight): weights give about a third of the records an empty input.
EN_TASKS = [
    (task_summarize, 7), (task_explain, 2), (task_passive, 4), (task_arithmetic, 3),
    (task_list, 2), (task_sentiment, 4), (task_capital, 2), (task_antonym, 2),
    (task_sort, 2), (task_uppercase, 2), (task_reverse, 2), (task_yes_no, 1),
    (task_short, 1), (task_note, 2), (task_story, 2),
]


def instruction_records(rng: random.Random, count: int) -> list[dict]:
    """``count`` distinct English instruction records (no exact duplicates)."""
    tasks = [task for task, _ in EN_TASKS]
    weights = [weight for _, weight in EN_TASKS]
    seen: set[tuple[str, str, str]] = set()
    records = []
    attempts = 0
    while len(records) < count:
        attempts += 1
        if attempts > count * 50:
            raise RuntimeError("word lists too small for the requested number of records")
        triple = rng.choices(tasks, weights)[0](rng)
        if triple in seen:
            continue
        seen.add(triple)
        records.append(dict(zip(("instruction", "input", "output"), triple)))
    return records


# ------------------------------------------------------------- Vietnamese chat turns

def vi_weather(rng: random.Random) -> tuple[str, str]:
    city = rng.choice(sorted(VI_CITIES))
    weather, (low, high), advice = rng.choice(VI_WEATHER)
    prompt = rng.choice(["Thời tiết ở {c} hôm nay thế nào?", "Cho tôi biết thời tiết hôm nay ở {c}."])
    return (prompt.format(c=city),
            f"Hôm nay ở {city} trời {weather}, nhiệt độ khoảng {rng.randint(low, high)} độ C. {advice}")


def vi_food(rng: random.Random) -> tuple[str, str]:
    dish = rng.choice(sorted(VI_DISHES))
    prompt = rng.choice([
        "Bạn có thể gợi ý một món ăn cho bữa {m} không?",
        "Tôi nên ăn gì vào bữa {m} hôm nay?",
    ])
    return prompt.format(m=rng.choice(VI_MEALS)), f"Bạn có thể thử {dish}. {VI_DISHES[dish]}"


def vi_learning(rng: random.Random) -> tuple[str, str]:
    skill = rng.choice(VI_SKILLS)
    a1, a2, a3 = rng.sample(VI_ADVICE, 3)
    prompt = rng.choice([
        "Làm thế nào để học {s} hiệu quả?",
        "Tôi muốn giỏi {s} hơn, bạn có lời khuyên nào không?",
    ])
    return (prompt.format(s=skill),
            f"Để học {skill} hiệu quả, bạn nên {a1}, {a2} và {a3}. {rng.choice(VI_CLOSINGS)}")


def vi_definition(rng: random.Random) -> tuple[str, str]:
    topic = rng.choice(sorted(VI_TOPICS))
    definition, extra = VI_TOPICS[topic]
    prompt = rng.choice([
        "{T} là gì?", "Bạn có thể giải thích {t} là gì không?", "Hãy giải thích ngắn gọn về {t}.",
    ])
    response = definition if rng.random() < 0.4 else f"{definition} {extra}"
    return prompt.format(t=topic, T=_cap(topic)), response


def vi_math(rng: random.Random) -> tuple[str, str]:
    a, b = rng.randint(2, 50), rng.randint(2, 20)
    kind = rng.choice(["cộng", "nhân", "táo"])
    if kind == "cộng":
        return f"{a} cộng {b} bằng bao nhiêu?", f"{a} cộng {b} bằng {a + b}."
    if kind == "nhân":
        return f"{a} nhân {b} bằng mấy?", f"{a} nhân {b} bằng {a * b}."
    big, small = max(a, b), min(a, b)
    return (f"Nếu tôi có {big} quả táo và ăn {small} quả thì còn lại bao nhiêu quả?",
            f"Bạn còn lại {big - small} quả táo.")


def vi_travel(rng: random.Random) -> tuple[str, str]:
    city = rng.choice(sorted(VI_CITIES))
    places, tip = VI_CITIES[city]
    p1, p2 = rng.sample(places, 2)
    return (f"Tôi nên đi đâu khi đến {city}?",
            f"Khi đến {city}, bạn có thể tham quan {p1} và {p2}. {tip}")


def vi_translate(rng: random.Random) -> tuple[str, str]:
    vi, en = rng.choice(VI_EN_PAIRS)
    if rng.random() < 0.5:
        return f'Dịch câu sau sang tiếng Anh: "{vi}"', f'Câu này có nghĩa là: "{en}"'
    return f'Dịch câu sau sang tiếng Việt: "{en}"', f'Câu này có nghĩa là: "{vi}"'


def vi_small_talk(rng: random.Random) -> tuple[str, str]:
    return rng.choice(VI_SMALL_TALK)


VI_TASKS = [
    (vi_weather, 3), (vi_food, 2), (vi_learning, 2), (vi_definition, 2),
    (vi_math, 2), (vi_travel, 2), (vi_translate, 1), (vi_small_talk, 1),
]


def chat_records(rng: random.Random, count: int) -> list[dict]:
    """``count`` distinct Vietnamese prompt/response records."""
    tasks = [task for task, _ in VI_TASKS]
    weights = [weight for _, weight in VI_TASKS]
    seen: set[tuple[str, str]] = set()
    records = []
    attempts = 0
    while len(records) < count:
        attempts += 1
        if attempts > count * 50:
            raise RuntimeError("word lists too small for the requested number of records")
        pair = rng.choices(tasks, weights)[0](rng)
        if pair in seen:
            continue
        seen.add(pair)
        records.append({"prompt": pair[0], "response": pair[1]})
    return records


# ---------------------------------------------------------------- training corpus

def corpus_lines(rng: random.Random, n_english: int, n_vietnamese: int) -> list[str]:
    """Sorted, de-duplicated single-line sentences for training the test tokenizers."""
    lines: set[str] = set()
    for topic in EN_TOPICS.values():
        lines.update(topic["facts"])
        lines.add(topic["summary"])
    for record in instruction_records(rng, n_english):
        for value in record.values():
            lines.update(part.strip() for part in value.split("\n"))
    for record in chat_records(rng, n_vietnamese):
        lines.update(record.values())
    for vi, en in VI_EN_PAIRS:
        lines.update((vi, en))
    lines.discard("")
    return sorted(lines)
