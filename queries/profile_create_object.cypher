// A new profile object of a user. $id $user_id $name $attributes (JSON list) $granularity $vector
CREATE (:ProfileObject {id: $id, user_id: $user_id, name: $name, attributes: $attributes,
        granularity: $granularity, vector: $vector})
